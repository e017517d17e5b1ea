/* extension-ffi's example op, on raw buffers: output = input1 + input2. */
#include <stdint.h>

int my_lib_add_forward(const float *input1, const float *input2, float *output, int64_t count);
int my_lib_add_backward(const float *grad_output, float *grad_input, int64_t count);
