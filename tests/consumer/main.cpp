#include <cstdio>
#include <gpucomm/gpucomm.hpp>

int main() {
  gpucomm::Runtime rt;
  std::printf("consumer: rank %d of %d, gpucomm %s\n", rt.rank(), rt.size(), GPUCOMM_VERSION_STRING);
  return 0;
}
