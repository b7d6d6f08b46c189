"""How a corpus page paints: what its first frame shows and what comes after.

A real home page does not go from blank to complete in one video frame; the
corpus page (corpus/site.py) is laid out so that it paints in stages, at a
1366x768 viewport (the testbed's):

1. First paint: text. The above-the-fold layout is critical CSS inlined in
   <head> (a coloured header bar with the logo and the navigation, a
   two-column fold: the hero box with the headline and lede on the left, an
   aside on the right), so the browser can lay it out and paint the text as
   soon as the render-blocking stylesheets and sync scripts are in; the hero
   box holds a light placeholder colour until its image comes.
2. Web fonts swap in: the body text is set in the page's first web font with
   `font-display: swap` (Google Fonts' CSS says `display=swap`, the
   self-hosted faces `font-display: swap`), so text paints in the fallback
   and re-paints when the font file arrives.
3. The hero image: 16:9, the page's largest image, placed one of four ways
   (HERO_MODES): in the markup (found by the preload scanner), in the markup
   with `loading="lazy"` (fetched only after layout), as an inline-style
   background (found at style calculation), or inserted by the app's script
   from the feed (client-side rendering: after the script and an API answer).
4. Content a script inserts after first paint: the aside's carousel (its first
   slide visible), a promo box in the brand's accent colour and the feed's
   list, all rendered by js/app.js from the JSON API.
5. Images that render progressively: JPEGs are progressive (corpus/images.py:
   a blurred first scan, then refinements), WebPs decode incrementally top to
   bottom; the browser paints both as their bytes arrive.

Shapes and where they come from (what is a published figure and what is an
assumption):
- Web fonts: 82 % of desktop pages use web fonts (Web Almanac 2020, Fonts);
  about half of declared faces use `font-display: swap` (CrUX-based tables of
  corewebvitals.io, "font-display strategy": 49.5 % of fonts, 57.7 % of sites
  with at least one). Every corpus page that has a font uses swap: an
  assumption that keeps the fallback text visible, as Google Fonts' default
  CSS (`display=swap`) does.
- Hero placement: about two thirds of LCP images are found in the HTML
  (corewebvitals.io, "LCP discovery": 68.4 %); the split of the rest between
  lazy-loading, CSS backgrounds and script is assumed (HERO_MODES).
- Layout (a header bar of 64 px, the hero column 64 % wide, the aside beside
  it), the colours and the promo box: assumed, a common news/shop home-page
  template; not measured.
Deterministic: plan(seed) draws from its own random.Random, so the rest of the
site's draws do not move when this module changes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

HERO_MODES = (("markup", 0.55), ("lazy", 0.15), ("background", 0.10), ("script", 0.20))
"""How the hero image is placed, and the share of sites drawn for each (assumed,
from the share of LCP images found in the HTML, above)."""
BRANDS = ("#1a4d8f", "#8f1a2e", "#1f6f4a", "#5b2a86", "#b3541e", "#234e52", "#7a1f5c",
          "#2d3748")
ACCENTS = ("#f2a900", "#e4572e", "#17bebb", "#76b041", "#ffc914", "#2e86ab")
PLACEHOLDER = "#eef0f2"


@dataclass(frozen=True)
class Paint:
    hero: str
    """markup, lazy, background or script (HERO_MODES)."""
    brand: str
    """The header bar's colour."""
    accent: str
    """The promo box's colour."""


def plan(seed: int) -> Paint:
    rng = random.Random(f"painting-{seed}")
    modes, weights = zip(*HERO_MODES, strict=True)
    return Paint(hero=rng.choices(modes, weights)[0], brand=rng.choice(BRANDS),
                 accent=rng.choice(ACCENTS))


def critical_css(paint: Paint, family: str | None) -> str:
    """The above-the-fold layout, inlined in <head>."""
    font = f"'{family}', Arial, sans-serif" if family else "Arial, sans-serif"
    return (
        f"html body{{margin:0;font-family:{font};color:#1b1b1b;background:#fff}}"
        f"body .top{{display:flex;align-items:center;gap:20px;height:64px;padding:0 24px;"
        f"background:{paint.brand};color:#fff;overflow:hidden}}"
        "body .top>img{height:44px;width:auto}"
        "body .top nav{display:flex;align-items:center;gap:14px;white-space:nowrap;overflow:hidden}"
        "body .top nav p{margin:0;font-size:15px}body .top nav img{filter:invert(1)}"
        "body .fold{display:grid;grid-template-columns:64% 1fr;gap:24px;padding:16px 24px}"
        "body .fold>*{min-width:0}"
        f"body .hero-media{{aspect-ratio:16/9;width:100%;background:{PLACEHOLDER} center/cover "
        "no-repeat}body .hero-media img{width:100%;height:100%;object-fit:cover;display:block}"
        "body .hero h1{font-size:30px;line-height:1.2;margin:14px 0 6px}"
        "body .lede{font-size:17px;line-height:1.5;margin:0}"
        "body .side .swiper-slide img{width:100%;height:auto;display:block}"
        "body .side h2{font-size:20px;margin:0 0 8px}body #carousel{position:relative}"
        "body #carousel button{position:absolute;top:40%;border:0;background:#fff8}"
        "body #next{right:0}"
        f"body .promo{{background:{paint.accent};color:#111;padding:14px 16px;margin:12px 0;"
        "min-height:96px;font-size:16px}"
        "body #feed{margin:0;padding-left:18px;font-size:14px;line-height:1.4}"
        "body main{display:grid;grid-template-columns:repeat(3,1fr);gap:24px;padding:24px}"
    )


def hero_html(paint: Paint, url: str, width: int, height: int) -> str:
    """The hero box as the markup carries it (empty when the script inserts the image)."""
    img = f'<img src="{url}" width="{width}" height="{height}" alt=""'
    if paint.hero == "markup":
        return f'<div class="hero-media" id="hero-media">{img}></div>'
    if paint.hero == "lazy":
        return f'<div class="hero-media" id="hero-media">{img} loading="lazy"></div>'
    if paint.hero == "background":
        return (f'<div class="hero-media" id="hero-media" role="img" '
                f'style="background-image:url({url})"></div>')
    return '<div class="hero-media" id="hero-media"></div>'
