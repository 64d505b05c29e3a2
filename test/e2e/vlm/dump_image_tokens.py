#!/usr/bin/env python3
"""An image file's tiles and tokens through a compiled vision-language
model's library (tfmc's Python API: Model.image_tiles, Model.image_tokens),
written as little-endian f32 PREFIX.tiles.bin and PREFIX.rows.bin for
compare_logits.py; prints the tile grid, the image's size and the rows'
shape, and whether the image's pixels as a uint8 array (read here with the
media library's tfm_image_read, as numpy.asarray(PIL.Image) would give
them) make the same rows as its file.

    dump_image_tokens.py LIBRARY IMAGE PREFIX"""
import ctypes
import sys

import numpy as np

import tfmc

model = tfmc.load(sys.argv[1])
image, prefix = sys.argv[2], sys.argv[3]
tiles, grid, size = model.image_tiles(image)
tiles.astype("<f4").tofile(prefix + ".tiles.bin")
rows = model.image_tokens(image)
rows.astype("<f4").tofile(prefix + ".rows.bin")
print(f"tiles {list(tiles.shape)} grid {list(grid)} image {list(size)} "
      f"rows {list(rows.shape)}")

media = tfmc._image_media()
media.tfm_image_read.argtypes = [
    ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_float)),
    ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
    ctypes.c_void_p]
rgb = ctypes.POINTER(ctypes.c_float)()
height, width = ctypes.c_int64(), ctypes.c_int64()
assert media.tfm_image_read(image.encode(), ctypes.byref(rgb),
                            ctypes.byref(height), ctypes.byref(width),
                            None) == 0
pixels = np.ctypeslib.as_array(rgb, (height.value, width.value, 3))
array = np.rint(pixels * 255).astype(np.uint8)
tfmc._LIBC.free(rgb)
print("array:", np.array_equal(model.image_tokens(array), rows))
