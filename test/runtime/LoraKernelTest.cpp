//===- LoraKernelTest.cpp - tfm.lora's kernel against plain loops --------===//
//
// tfm_rt_lora adds each row's adapter update B·(A·x) to the projection's
// row, reading the slots the runtime bound to the call's rows: checked
// against the sums written out, for rows of several slots and none, one
// slot for every row, no binding, and another model's target.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/core/lora_bank.h"
}
#include "test/runtime/RandomValues.h"
#include "tfm/runtime_kernels.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

// 130 outputs: split in column ranges over threads when rows share one
// adapter.
constexpr int64_t kIn = 5, kOut = 130, kRank = 2, kRows = 5;

/// A [rows, cols] row-major matrix as the kernel takes it.
tfm_memref2d_f32 matrix(std::vector<float> &values, int64_t rows,
                        int64_t cols) {
  return {values.data(), values.data(), 0, {rows, cols}, {cols, 1}};
}

struct Bank {
  tfm_lora_target targets[2] = {{"other", 7, 7}, {"w", kIn, kOut}};
  tfm_lora_desc desc = {2, int32_t(kRank), 2, targets};
  tfm_lora_bank *bank = nullptr;
  std::vector<std::vector<float>> slots;

  Bank() {
    int failed = 0;
    bank = tfm_lora_bank_new(&desc, &failed);
    for (unsigned seed : {1u, 2u}) {
      int64_t floats = tfm_lora_slot_floats(bank);
      slots.push_back(tfm_test::randomValues(size_t(floats), seed));
      auto *data = static_cast<float *>(malloc(size_t(floats) * 4));
      memcpy(data, slots.back().data(), size_t(floats) * 4);
      int32_t adapter;
      tfm_status status;
      EXPECT_EQ(tfm_lora_bank_install(bank, data, "test", &adapter, &status),
                TFM_OK);
    }
  }
  ~Bank() { tfm_lora_bank_free(bank); }

  /// Row `x` of target 1 plus slot `slot`'s update, in doubles.
  std::vector<double> expected(const float *x, const float *y,
                               int32_t slot) const {
    std::vector<double> out(y, y + kOut);
    if (slot < 0)
      return out;
    const float *a =
        slots[size_t(slot)].data() + tfm_lora_target_offset(bank, 1);
    const float *b = a + kRank * kIn;
    for (int64_t o = 0; o < kOut; ++o)
      for (int64_t r = 0; r < kRank; ++r) {
        double h = 0;
        for (int64_t k = 0; k < kIn; ++k)
          h += double(a[r * kIn + k]) * x[k];
        out[size_t(o)] += double(b[o * kRank + r]) * h;
      }
    return out;
  }
};

/// Runs the kernel on target `target` with `rows` bound (or none) and
/// checks every row against Bank::expected with `slotOf(row)`.
void check(const Bank &bank, const tfm_lora_rows *rows, int64_t target,
           const std::vector<int32_t> &slotOf) {
  std::vector<float> x = tfm_test::randomValues(kRows * kIn, 3);
  std::vector<float> y = tfm_test::randomValues(kRows * kOut, 4);
  std::vector<float> out(kRows * kOut, -1.0f);
  tfm_memref2d_f32 xm = matrix(x, kRows, kIn), ym = matrix(y, kRows, kOut),
                   om = matrix(out, kRows, kOut);
  const tfm_lora_rows *outer = tfm_lora_bind(rows);
  _mlir_ciface_tfm_rt_lora(&xm, &ym, &om, target);
  tfm_lora_bind(outer);
  for (int64_t i = 0; i < kRows; ++i) {
    std::vector<double> want = bank.expected(
        &x[size_t(i * kIn)], &y[size_t(i * kOut)], slotOf[size_t(i)]);
    for (int64_t o = 0; o < kOut; ++o)
      EXPECT_NEAR(out[size_t(i * kOut + o)], want[size_t(o)], 1e-4)
          << "row " << i << ", column " << o;
  }
}

TEST(LoraKernel, EachRowItsOwnSlotOrNone) {
  Bank bank;
  std::vector<int32_t> slots = {0, 0, -1, 1, 1};
  tfm_lora_rows rows = {bank.bank, slots.data(), kRows};
  check(bank, &rows, 1, slots);
}

TEST(LoraKernel, RowsOfOneSlotApartAreGathered) {
  Bank bank;
  std::vector<int32_t> slots = {1, 0, 1, -1, 0};
  tfm_lora_rows rows = {bank.bank, slots.data(), kRows};
  check(bank, &rows, 1, slots);
}

TEST(LoraKernel, OneSlotForEveryRow) {
  Bank bank;
  int32_t slot = 1;
  tfm_lora_rows rows = {bank.bank, &slot, 1};
  check(bank, &rows, 1, std::vector<int32_t>(kRows, 1));
}

TEST(LoraKernel, WithoutABindingOrForAnotherTargetRowsAreCopied) {
  Bank bank;
  check(bank, nullptr, 1, std::vector<int32_t>(kRows, -1));
  // Target 0's features are not these rows': another model's code.
  int32_t slot = 0;
  tfm_lora_rows rows = {bank.bank, &slot, 1};
  check(bank, &rows, 0, std::vector<int32_t>(kRows, -1));
}

} // namespace
