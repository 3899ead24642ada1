//! Small raster plots written as PNG (the `png` crate; no font or system library): the OPTICS
//! reachability plot and maps of clustered points. Numbers on the axes use a built-in 3 × 5
//! pixel font of digits and `.-e+inf`; titles and axis names belong in the caption of the
//! document that shows the plot.

use crate::error::{Error, Result};
use std::path::Path;

/// An RGB raster canvas with a white background.
pub struct Canvas {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    rgb: Vec<u8>,
}

/// Colour of cluster `label` (a fixed palette of 12 distinguishable colours, cycled); noise
/// (negative labels) is grey.
pub fn cluster_color(label: i64) -> [u8; 3] {
    const PALETTE: [[u8; 3]; 12] = [
        [31, 119, 180],
        [255, 127, 14],
        [44, 160, 44],
        [214, 39, 40],
        [148, 103, 189],
        [140, 86, 75],
        [227, 119, 194],
        [188, 189, 34],
        [23, 190, 207],
        [57, 59, 121],
        [173, 73, 74],
        [107, 110, 207],
    ];
    if label < 0 {
        [170, 170, 170]
    } else {
        PALETTE[label as usize % PALETTE.len()]
    }
}

/// 3 × 5 glyphs, one row per 3 bits (most significant bit on the left).
fn glyph(c: char) -> Option<[u8; 5]> {
    Some(match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        '-' => [0, 0, 7, 0, 0],
        '+' => [0, 2, 7, 2, 0],
        'e' => [0, 7, 7, 4, 7],
        'i' => [2, 0, 2, 2, 2],
        'n' => [0, 6, 5, 5, 5],
        'f' => [3, 4, 7, 4, 4],
        ' ' => [0; 5],
        _ => return None,
    })
}

impl Canvas {
    /// A white canvas.
    pub fn new(width: usize, height: usize) -> Self {
        Canvas {
            width,
            height,
            rgb: vec![255; width * height * 3],
        }
    }

    /// Sets one pixel (ignored outside the canvas).
    pub fn set(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height {
            let o = (y as usize * self.width + x as usize) * 3;
            self.rgb[o..o + 3].copy_from_slice(&c);
        }
    }

    /// Fills the rectangle `[x0, x1) × [y0, y1)`.
    pub fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: [u8; 3]) {
        for y in y0..y1 {
            for x in x0..x1 {
                self.set(x, y, c);
            }
        }
    }

    /// A filled disc of radius `r`.
    pub fn disc(&mut self, cx: i64, cy: i64, r: i64, c: [u8; 3]) {
        for y in -r..=r {
            for x in -r..=r {
                if x * x + y * y <= r * r {
                    self.set(cx + x, cy + y, c);
                }
            }
        }
    }

    /// Text in the built-in font at scale `s` (unknown characters are skipped).
    pub fn text(&mut self, x: i64, y: i64, s: &str, scale: i64, c: [u8; 3]) {
        for (k, ch) in s.chars().enumerate() {
            if let Some(g) = glyph(ch) {
                for (row, bits) in g.iter().enumerate() {
                    for col in 0..3 {
                        if bits >> (2 - col) & 1 == 1 {
                            let (px, py) = (x + (k as i64 * 4 + col) * scale, y + row as i64 * scale);
                            self.fill_rect(px, py, px + scale, py + scale, c);
                        }
                    }
                }
            }
        }
    }

    /// A line segment `width` pixels thick.
    pub fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), width: i64, c: [u8; 3]) {
        let steps = (x1 - x0).abs().max((y1 - y0).abs()).max(1);
        for s in 0..=steps {
            let x = x0 + (x1 - x0) * s / steps;
            let y = y0 + (y1 - y0) * s / steps;
            self.fill_rect(
                x - width / 2,
                y - width / 2,
                x - width / 2 + width,
                y - width / 2 + width,
                c,
            );
        }
    }

    /// Writes the canvas as an 8-bit RGB PNG, atomically.
    pub fn save_png(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        crate::data::atomic_write(path, |file| {
            let mut enc = png::Encoder::new(file, self.width as u32, self.height as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            // A failed write (a full disk) is an I/O error, not bad input.
            let fail = |e: png::EncodingError| match e {
                png::EncodingError::IoError(io) => Error::io(path, io),
                e => Error::Unsupported(format!("{}: PNG encoding: {e}", path.display())),
            };
            let mut w = enc.write_header().map_err(fail)?;
            w.write_image_data(&self.rgb).map_err(fail)?;
            w.finish().map_err(fail)
        })
    }
}

/// A short label for an axis value (`1.5`, `0.25`, `2e-3`, `inf`).
pub fn tick_label(v: f64) -> String {
    if v.is_infinite() {
        return "inf".into();
    }
    if v != 0.0 && (v.abs() < 1e-2 || v.abs() >= 1e4) {
        return format!("{v:.0e}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The reachability plot of an OPTICS ordering: one bar per point in order, its height the
/// reachability (infinite ones drawn to the top in a lighter shade), coloured by cluster
/// (noise grey), with y-axis ticks.
pub fn reachability_plot(
    ordering: &[usize],
    reachability: &[f64],
    labels: &[i64],
    path: impl AsRef<Path>,
) -> Result<()> {
    let n = ordering.len();
    let (left, right, top, bottom) = (60i64, 10i64, 10i64, 20i64);
    let plot_w = n.clamp(200, 1600) as i64;
    let plot_h = 400i64;
    let mut c = Canvas::new((left + plot_w + right) as usize, (top + plot_h + bottom) as usize);
    let finite_max = reachability
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_max = if finite_max > 0.0 { finite_max * 1.05 } else { 1.0 };
    let y_of = |v: f64| top + plot_h - ((v / y_max).min(1.0) * plot_h as f64).round() as i64;
    // Ticks and grid.
    for t in 0..=4 {
        let v = y_max * t as f64 / 4.0;
        let y = y_of(v);
        c.fill_rect(left, y, left + plot_w, y + 1, [225, 225, 225]);
        c.text(4, y - 5, &tick_label(v), 2, [60, 60, 60]);
    }
    for (pos, &p) in ordering.iter().enumerate() {
        let x0 = left + (pos as i64 * plot_w) / n.max(1) as i64;
        let x1 = (left + ((pos as i64 + 1) * plot_w) / n.max(1) as i64).max(x0 + 1);
        let r = reachability[p];
        let mut col = cluster_color(labels[p]);
        if r.is_infinite() {
            col = col.map(|v| v / 2 + 128);
        }
        c.fill_rect(
            x0,
            y_of(if r.is_finite() { r } else { y_max }),
            x1,
            top + plot_h,
            col,
        );
    }
    c.fill_rect(left - 1, top, left, top + plot_h + 1, [0, 0, 0]);
    c.fill_rect(left - 1, top + plot_h, left + plot_w, top + plot_h + 1, [0, 0, 0]);
    c.save_png(path)
}

/// A functional prediction over one input: the 95% band `mean ± 1.96·√var` (shaded), each
/// cluster's mean (thin, in its cluster colour), the mixture mean (thick, black) and the
/// observed points (discs), as MagmaClustR's `plot_magmaclust`. `inputs` must be sorted.
pub fn prediction_plot(
    inputs: &[f64],
    mean: &[f64],
    var: &[f64],
    cluster_means: &[Vec<f64>],
    observed: (&[f64], &[f64]),
    path: impl AsRef<Path>,
) -> Result<()> {
    let (left, right, top, bottom) = (70i64, 10i64, 10i64, 30i64);
    let (plot_w, plot_h) = (800i64, 450i64);
    let mut c = Canvas::new((left + plot_w + right) as usize, (top + plot_h + bottom) as usize);
    let sd: Vec<f64> = var.iter().map(|v| 1.96 * v.max(0.0).sqrt()).collect();
    let ys = mean
        .iter()
        .zip(&sd)
        .flat_map(|(m, s)| [m - s, m + s])
        .chain(cluster_means.iter().flatten().copied())
        .chain(observed.1.iter().copied());
    let xs = inputs.iter().chain(observed.0).copied();
    let range = |it: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = it
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if lo < hi {
            (lo, hi)
        } else if lo.is_finite() {
            (lo - 1.0, lo + 1.0)
        } else {
            (0.0, 1.0)
        }
    };
    let (x_lo, x_hi) = range(&mut xs.into_iter());
    let (y_lo, y_hi) = range(&mut ys.into_iter());
    let pad = 0.05 * (y_hi - y_lo);
    let (y_lo, y_hi) = (y_lo - pad, y_hi + pad);
    let px = |x: f64| left + ((x - x_lo) / (x_hi - x_lo) * plot_w as f64).round() as i64;
    let py = |y: f64| top + plot_h - ((y - y_lo) / (y_hi - y_lo) * plot_h as f64).round() as i64;
    for t in 0..=4 {
        let v = y_lo + (y_hi - y_lo) * t as f64 / 4.0;
        c.fill_rect(left, py(v), left + plot_w, py(v) + 1, [225, 225, 225]);
        c.text(4, py(v) - 5, &tick_label(v), 2, [60, 60, 60]);
        let u = x_lo + (x_hi - x_lo) * t as f64 / 4.0;
        c.text(px(u) - 10, top + plot_h + 8, &tick_label(u), 2, [60, 60, 60]);
    }
    for w in 0..inputs.len().saturating_sub(1) {
        for x in px(inputs[w])..=px(inputs[w + 1]) {
            let f = (x - px(inputs[w])) as f64 / (px(inputs[w + 1]) - px(inputs[w])).max(1) as f64;
            let at = |v: &[f64]| v[w] + f * (v[w + 1] - v[w]);
            let (m, s) = (at(mean), at(&sd));
            c.fill_rect(x, py(m + s), x + 1, py(m - s) + 1, [200, 215, 240]);
        }
    }
    let curve = |c: &mut Canvas, v: &[f64], width: i64, col: [u8; 3]| {
        for w in 0..inputs.len().saturating_sub(1) {
            c.line(
                (px(inputs[w]), py(v[w])),
                (px(inputs[w + 1]), py(v[w + 1])),
                width,
                col,
            );
        }
    };
    for (k, m) in cluster_means.iter().enumerate() {
        curve(&mut c, m, 1, cluster_color(k as i64));
    }
    curve(&mut c, mean, 3, [0, 0, 0]);
    for (&x, &y) in observed.0.iter().zip(observed.1) {
        c.disc(px(x), py(y), 4, [200, 30, 30]);
    }
    c.fill_rect(left - 1, top, left, top + plot_h + 1, [0, 0, 0]);
    c.fill_rect(left - 1, top + plot_h, left + plot_w, top + plot_h + 1, [0, 0, 0]);
    c.save_png(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_with_the_right_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.png");
        reachability_plot(&[2, 0, 1], &[f64::INFINITY, 0.5, 0.2], &[0, 0, -1], &p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((width, height), (60 + 200 + 10, 10 + 400 + 20));
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(2.0), "2");
        assert_eq!(tick_label(f64::INFINITY), "inf");
        assert_eq!(tick_label(0.002), "2e-3");
    }
}
