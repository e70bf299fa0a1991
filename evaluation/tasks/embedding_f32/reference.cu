// y[i, :] = table[ids[i], :] (an embedding lookup; the table has 1000 rows of dim floats)
__global__ void embedding_f32(const float* table, const int* ids, float* y, int n, int dim) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)n * dim) return;
    int row = (int)(i / dim), c = (int)(i % dim);
    y[i] = table[(size_t)ids[row] * dim + c];
}
