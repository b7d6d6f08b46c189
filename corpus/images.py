"""Photo-like images, deterministic from a seed, of about a given size in bytes.

A photo here is a smooth random field (a few octaves of seeded noise scaled
up, like light and shade), a handful of soft shapes and fine grain, so JPEG
and WebP compress it about as much as a real photo (some 0.1–0.3 bytes per
pixel); PNG is used for graphics (flat shapes, a few colours, as logos and
banners are) and SVG for icons. The same (kind, seed, size) gives the same
bytes: Pillow and libjpeg/libwebp/zlib are deterministic for fixed input
and settings.
"""

from __future__ import annotations

import io
import math
from functools import cache

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

QUALITY = {"jpeg": 82, "webp": 78}
ASPECTS = ((16, 9), (4, 3), (3, 2), (1, 1), (2, 3))
MAX_SIDE = 4000
MIN_SIDE = 16


def _photo(w: int, h: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    field = np.zeros((h, w, 3), np.float32)
    for octave, weight in ((4, 90.0), (16, 40.0), (64, 14.0)):
        small = rng.normal(0, 1, (max(2, h * octave // max(w, h)), octave, 3))
        layer = np.asarray(Image.fromarray(((small + 4) * 32).clip(0, 255).astype(np.uint8))
                           .resize((w, h), Image.BICUBIC), np.float32) - 128
        field += layer * weight / 128
    base = rng.uniform(60, 190, 3).astype(np.float32)
    img = Image.fromarray((field + base).clip(0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img, "RGBA")
    for _ in range(6):
        x, y = rng.uniform(0, w), rng.uniform(0, h)
        r = rng.uniform(0.05, 0.3) * max(w, h)
        colour = tuple(int(c) for c in rng.integers(0, 256, 3)) + (int(rng.integers(60, 160)),)
        draw.ellipse([x - r, y - r * 0.7, x + r, y + r * 0.7], fill=colour)
    img = img.filter(ImageFilter.GaussianBlur(1.2))
    grain = rng.normal(0, 7, (h, w, 1)).astype(np.float32)
    return Image.fromarray((np.asarray(img, np.float32) + grain).clip(0, 255)
                           .astype(np.uint8), "RGB")


def _graphic(w: int, h: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    palette = [tuple(int(c) for c in rng.integers(0, 256, 3)) for _ in range(5)]
    img = Image.new("RGB", (w, h), palette[0])
    draw = ImageDraw.Draw(img)
    for i in range(12):
        x0, y0 = rng.uniform(0, w), rng.uniform(0, h)
        x1, y1 = x0 + rng.uniform(0.05, 0.5) * w, y0 + rng.uniform(0.05, 0.5) * h
        shape = draw.rectangle if i % 2 else draw.ellipse
        shape([x0, y0, x1, y1], fill=palette[1 + i % 4])
    # A soft shadow band, as banners have: gives the encoder some gradient.
    arr = np.asarray(img, np.int16)
    shade = (np.linspace(0, 24, h)[:, None, None] * rng.uniform(0.5, 1.5)).astype(np.int16)
    arr = arr - shade + rng.integers(-3, 4, arr.shape, dtype=np.int16)
    return Image.fromarray(arr.clip(0, 255).astype(np.uint8), "RGB")


def encode(kind: str, w: int, h: int, seed: int) -> bytes:
    """One image: kind is jpeg, webp or png."""
    out = io.BytesIO()
    if kind == "png":
        _graphic(w, h, seed).save(out, "PNG", optimize=False, compress_level=6)
    elif kind == "jpeg":
        _photo(w, h, seed).save(out, "JPEG", quality=QUALITY["jpeg"], progressive=True,
                                optimize=True)
    elif kind == "webp":
        _photo(w, h, seed).save(out, "WEBP", quality=QUALITY["webp"], method=4)
    else:
        raise ValueError(kind)
    return out.getvalue()


@cache
def bytes_per_pixel(kind: str) -> float:
    """Measured once per process on a 480x360 sample."""
    return sum(len(encode(kind, 480, 360, s)) for s in (1, 2)) / (2 * 480 * 360)


def sized(kind: str, target: int, seed: int, aspect: tuple[int, int]) -> tuple[bytes, int, int]:
    """An image of about `target` bytes with the given aspect: (body, width, height)."""
    aw, ah = aspect
    pixels = max(target / bytes_per_pixel(kind), MIN_SIDE * MIN_SIDE)
    w = math.sqrt(pixels * aw / ah)
    scale = min(1.0, MAX_SIDE / max(w, w * ah / aw))
    w = max(MIN_SIDE, round(w * scale))
    h = max(MIN_SIDE, round(w * ah / aw))
    return encode(kind, w, h, seed), w, h


def svg_icon(seed: int, size: int = 24) -> bytes:
    """A small SVG icon (a few paths), as icon sets ship them."""
    rng = np.random.default_rng(seed)
    paths = []
    for _ in range(3 + seed % 4):
        pts = rng.integers(2, size - 2, (4, 2))
        d = "M{} {} C{} {} {} {} {} {}".format(*pts.flatten())
        paths.append(f'<path d="{d}" fill="none" stroke="currentColor" stroke-width="2" '
                     'stroke-linecap="round"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
            f'viewBox="0 0 {size} {size}">' + "".join(paths) + "</svg>\n").encode()
