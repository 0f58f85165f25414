from gpucomm.cli import main

raise SystemExit(main())
