#!/usr/bin/env python3
"""An image file's tiles and tokens through a compiled vision-language
model's library (tfmc's Python API: Model.image_tiles, Model.image_tokens),
written as little-endian f32 PREFIX.tiles.bin and PREFIX.rows.bin for
compare_logits.py; prints the tile grid, the image's size and the rows'
shape.

    dump_image_tokens.py LIBRARY IMAGE PREFIX"""
import sys

import tfmc

model = tfmc.load(sys.argv[1])
image, prefix = sys.argv[2], sys.argv[3]
tiles, grid, size = model.image_tiles(image)
tiles.astype("<f4").tofile(prefix + ".tiles.bin")
rows = model.image_tokens(image)
rows.astype("<f4").tofile(prefix + ".rows.bin")
print(f"tiles {list(tiles.shape)} grid {list(grid)} image {list(size)} "
      f"rows {list(rows.shape)}")
