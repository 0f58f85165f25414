"""Nonblocking collectives for gpucomm.collectives: a request per call, run by one worker thread
per Collectives object in call order.

gpucomm runs one collective per team at a time, and every member must call the collectives of a
team in the same order; the worker runs the requests one after the other, in the order they were
made, so both hold. A blocking call of the same Collectives object first waits for the requests
made before it (Collectives._settled).
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Optional


class Request:
    """One nonblocking collective. ``wait()`` returns its result (what the blocking call returns)
    or raises its error; ``test()`` says whether it has finished, without waiting."""

    def __init__(self, call: str, run: Callable[[], Any]):
        self.call = call
        self._run = run
        self._done = threading.Event()
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def _execute(self) -> None:
        try:
            self._result = self._run()
        except BaseException as e:  # noqa: BLE001 - handed to wait()
            self._error = e
        finally:
            self._run = None
            self._done.set()

    def test(self) -> bool:
        return self._done.is_set()

    def wait(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result

    def __repr__(self) -> str:
        return f"<gpucomm Request {self.call} {'done' if self.test() else 'pending'}>"


class RequestQueue:
    """The requests of one Collectives object, run in call order by one daemon thread."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Optional[Request]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def submit(self, call: str, run: Callable[[], Any]) -> Request:
        request = Request(call, run)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="gpucomm-collectives", daemon=True)
                self._thread.start()
            self._queue.put(request)
        return request

    def _work(self) -> None:
        while True:
            request = self._queue.get()
            try:
                if request is None:
                    return
                request._execute()
            finally:
                self._queue.task_done()

    def in_worker(self) -> bool:
        return threading.current_thread() is self._thread

    def drain(self) -> None:
        """Waits until every request made so far has finished (no-op on the worker itself)."""
        if self._thread is not None and not self.in_worker():
            self._queue.join()

    def stop(self, wait: bool) -> None:
        """Ends the worker after the requests queued (wait=False: without waiting for it)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(None)
        if wait:
            thread.join()
