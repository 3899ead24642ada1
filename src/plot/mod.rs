//! Plots as PNG or SVG, chosen by the file's extension, drawn with the plotters crate. Every
//! plot has a title, labelled axes and a legend. Text is set in DejaVu Sans, which is bundled
//! (assets/fonts, Bitstream Vera licence), so no system font or font library is needed.
//!
//! A PNG is rendered into memory by plotters' bitmap backend and encoded by the `png` crate.
//! Both formats are written atomically: a failed write leaves no half file. The figures:
//! [`LineChart`] (the studies' curves), [`ClusterScatter`] (maps of clustered points),
//! [`Reachability`] (OPTICS), [`Prediction`] (MagmaClust), and the HDBSCAN condensed tree
//! (`HdbscanModel::plot_condensed_tree`, through [`Icicle`]).

use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::io::Write as _;
use std::path::Path;

mod figures;
pub use figures::{ClusterScatter, Icicle, LineChart, Prediction, Reachability, Series, Style};

/// The bundled font: DejaVu Sans.
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// What drawing on a plotters backend returns.
pub type Drawn<DB> = std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A plot that can be drawn on any plotters backend and saved as PNG or SVG.
pub trait Figure {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32) {
        (1000, 600)
    }

    /// Draws the plot on `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB>;

    /// Writes the plot to `path`: SVG when its extension is `svg`, PNG otherwise.
    fn save(&self, path: impl AsRef<Path>) -> Result<()>
    where
        Self: Sized,
    {
        save(self, path.as_ref())
    }
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font, checked by this module's tests.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

fn save<F: Figure>(figure: &F, path: &Path) -> Result<()> {
    register_font();
    let size = figure.size();
    let failed = |e: String| Error::Unsupported(format!("{}: drawing the plot: {e}", path.display()));
    let svg = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if svg {
        let mut text = String::new();
        {
            let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
            figure.draw(&root).map_err(|e| failed(e.to_string()))?;
            root.present().map_err(|e| failed(e.to_string()))?;
        }
        return crate::data::atomic_write(path, |file| {
            file.write_all(text.as_bytes()).map_err(|e| Error::io(path, e))
        });
    }
    let mut rgb = vec![255u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        figure.draw(&root).map_err(|e| failed(e.to_string()))?;
        root.present().map_err(|e| failed(e.to_string()))?;
    }
    write_png(path, size, &rgb)
}

/// Writes 8-bit RGB pixels as a PNG, atomically.
fn write_png(path: &Path, (width, height): (u32, u32), rgb: &[u8]) -> Result<()> {
    crate::data::atomic_write(path, |file| {
        let mut enc = png::Encoder::new(file, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // A failed write (a full disk) is an I/O error, not bad input.
        let fail = |e: png::EncodingError| match e {
            png::EncodingError::IoError(io) => Error::io(path, io),
            e => Error::Unsupported(format!("{}: PNG encoding: {e}", path.display())),
        };
        let mut w = enc.write_header().map_err(fail)?;
        w.write_image_data(rgb).map_err(fail)?;
        w.finish().map_err(fail)
    })
}

/// Colour of cluster `label` (a palette of 12 distinguishable colours, cycled); noise
/// (negative labels) is grey.
pub fn cluster_color(label: i64) -> RGBColor {
    const PALETTE: [(u8, u8, u8); 12] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (188, 189, 34),
        (23, 190, 207),
        (57, 59, 121),
        (173, 73, 74),
        (107, 110, 207),
    ];
    if label < 0 {
        RGBColor(170, 170, 170)
    } else {
        let (r, g, b) = PALETTE[label as usize % PALETTE.len()];
        RGBColor(r, g, b)
    }
}

const TITLE: (&str, u32) = ("sans-serif", 24);
const LABEL: (&str, u32) = ("sans-serif", 18);
const LEGEND: (&str, u32) = ("sans-serif", 15);
/// Clusters named one by one in a legend (the palette's size); the rest share one entry.
const LEGEND_CLUSTERS: usize = 12;

/// An axis value as people write it: `0.25`, `2`, `1500`, `2e-4`, `1e6`.
fn tick(v: &f64) -> String {
    let v = *v;
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 1e5 || v.abs() < 1e-3 {
        let s = format!("{v:.1e}");
        return s.replace(".0e", "e");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The smallest and largest finite values, widened when they are equal or absent.
fn extent(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
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
}

/// Draws the legend box of a chart in the upper right.
fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Drawn<DB> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(LEGEND)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
}

/// A filled square for a legend entry.
fn swatch(colour: RGBColor) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], colour.filled())
}

/// Legend entries for cluster colours: the first [`LEGEND_CLUSTERS`] clusters by number, the
/// rest as one entry, and noise when there is any. Drawn as invisible series on `chart`.
fn cluster_legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    labels: &[i64],
    noise_name: &str,
) -> Drawn<DB> {
    let clusters = labels
        .iter()
        .copied()
        .filter(|&l| l >= 0)
        .max()
        .map_or(0, |m| m + 1);
    let mut entries: Vec<(String, RGBColor)> = (0..clusters.min(LEGEND_CLUSTERS as i64))
        .map(|c| (format!("cluster {c}"), cluster_color(c)))
        .collect();
    if clusters > LEGEND_CLUSTERS as i64 {
        entries.push((
            format!("clusters {LEGEND_CLUSTERS}–{}: the colours repeat", clusters - 1),
            RGBColor(255, 255, 255),
        ));
    }
    if labels.iter().any(|&l| l < 0) {
        entries.push((noise_name.to_string(), cluster_color(-1)));
    }
    for (name, colour) in entries {
        chart
            .draw_series(std::iter::empty::<Circle<(X::ValueType, Y::ValueType), i32>>())?
            .label(name)
            .legend(swatch(colour));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
