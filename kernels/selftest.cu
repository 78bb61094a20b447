// A kernel that proves the runtime path end to end (NVRTC compile for the device's own
// architecture, module load, launch, copies): out[i] = in[i] ^ key, bounds-checked.
extern "C" __global__ void colzip_selftest(const unsigned char* in, unsigned char* out,
                                           unsigned int n, unsigned char key) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i] ^ key;
    }
}
