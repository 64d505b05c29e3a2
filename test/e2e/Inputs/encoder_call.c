/* An encoder through the library API: tfm_model_call of @encode checks that
 * token ids and token types have the same length (the generated code adds
 * their embeddings row by row) and computes the same hidden states as the
 * executable. Prints what it saw. */
#include "model.h"

#include <stdio.h>

int main(void) {
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(&model_model, NULL, &model, &status) != TFM_OK) {
    printf("error: %s\n", status.message);
    return 1;
  }
  int32_t ids[3] = {2, 17, 3}, types[3] = {0, 1, 0};
  tfm_tensor inputs[2] = {{ids, TFM_DTYPE_I32, 1, {3}, NULL},
                          {types, TFM_DTYPE_I32, 1, {2}, NULL}};
  tfm_tensor hidden;
  tfm_status_code code =
      tfm_model_call(model, "encode", inputs, 2, NULL, &hidden, 1, &status);
  printf("mismatched: %d %s\n", code, status.message);
  inputs[1].shape[0] = 3;
  code = tfm_model_call(model, "encode", inputs, 2, NULL, &hidden, 1, &status);
  printf("matched: %d [%lld, %lld] %.5f\n", code, (long long)hidden.shape[0],
         (long long)hidden.shape[1], ((const float *)hidden.data)[0]);
  tfm_tensor_release(&hidden);
  tfm_model_free(model);
  return 0;
}
