// Device code from an installed gpucomm compiles in a consumer's own translation unit, without
// -rdc or device linking.
#include <cstdio>
#include <gpucomm/gpucomm.hpp>

__global__ void touch(int* p) {
  *p = 1;
}

int main() {
  gpucomm::Runtime rt;
  std::printf("consumer_kernel: rank %d of %d\n", rt.rank(), rt.size());
  return 0;
}
