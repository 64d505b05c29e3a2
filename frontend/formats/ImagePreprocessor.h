//===- ImagePreprocessor.h - preprocessor_config.json -----------*- C++ -*-===//
//
// What transformers' image processors do to an image before the model sees
// it, read into #tfm.image_preprocessing (the runtime's tfm_image_load
// follows it).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_IMAGEPREPROCESSOR_H
#define TFM_FRONTEND_FORMATS_IMAGEPREPROCESSOR_H

#include "ir/TfmDialect.h"

#include "llvm/Support/Error.h"

namespace mlir::tfm {

/// preprocessor_config.json in `directory`: how an
/// image file becomes the model's [3, imageSize, imageSize] input; a null
/// attribute when there is no such file. `sizeIsShortestEdge`: a number as
/// `size` is the shortest edge (CLIP's processor), not a square (ViT's).
llvm::Expected<ImagePreprocessingAttr>
readImagePreprocessing(MLIRContext &context, llvm::StringRef directory,
                       int64_t imageSize, bool sizeIsShortestEdge = false);

/// Idefics3ImageProcessor's steps from preprocessor_config.json in
/// `directory` (a null attribute without one): the image resized so that
/// its longer side is size.longest_edge, then with do_image_splitting cut
/// into max_image_size.longest_edge tiles plus the whole squashed to one
/// (else squashed to that square), 1/255, (x - mean) / std per channel.
/// The tiles must be the tower's `tileSize`.
llvm::Expected<ImagePreprocessingAttr>
readIdefics3Preprocessing(MLIRContext &context, llvm::StringRef directory,
                          int64_t tileSize);

/// Idefics3ImageProcessor's steps as SmolVLM's published processor has
/// them: resized to `longestEdge` (Lanczos), cut into `tileSize` tiles
/// plus the whole, 1/255, then (x - mean) / std per channel; for
/// llama.cpp's Idefics3 mmproj files, as clipImagePreprocessing.
llvm::Expected<ImagePreprocessingAttr> idefics3ImagePreprocessing(
    MLIRContext &context, llvm::StringRef source, int64_t tileSize,
    int64_t longestEdge, llvm::ArrayRef<float> mean, llvm::ArrayRef<float> std);

/// CLIPImageProcessor's steps as LLaVA's preprocessor_config.json gives
/// them: the shortest edge resized to `imageSize` (bicubic), the centered
/// square of that size cropped, 1/255, then (x - mean) / std per channel.
/// For a model whose file gives only the mean and std (llama.cpp's mmproj
/// files); `source` names it in messages.
llvm::Expected<ImagePreprocessingAttr>
clipImagePreprocessing(MLIRContext &context, llvm::StringRef source,
                       int64_t imageSize, llvm::ArrayRef<float> mean,
                       llvm::ArrayRef<float> std);

/// Gemma3ImageProcessor's steps: the image resized to `imageSize` square
/// (bilinear, the aspect not kept), 1/255, then (x - mean) / std per
/// channel; for llama.cpp's Gemma 3 mmproj files, as clipImagePreprocessing.
llvm::Expected<ImagePreprocessingAttr>
squareImagePreprocessing(MLIRContext &context, llvm::StringRef source,
                         int64_t imageSize, llvm::ArrayRef<float> mean,
                         llvm::ArrayRef<float> std);

/// `preprocessing` with LLaVA-NeXT's any-resolution tiles (its
/// image_grid_pinpoints, height and width pairs, each a multiple of the
/// crop); `source` names them in messages.
llvm::Expected<ImagePreprocessingAttr>
withGridPinpoints(ImagePreprocessingAttr preprocessing, llvm::StringRef source,
                  llvm::ArrayRef<int64_t> pinpoints);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_IMAGEPREPROCESSOR_H
