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

/// The bundled font: DejaVu Sans.
const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

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

/// How a [`Series`] is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Style {
    /// A solid line through the points, with a marker on each.
    LineAndPoints,
    /// A dashed line, no markers (guides such as reference slopes).
    Dashed,
    /// Markers only.
    Points,
}

/// One named curve of a [`LineChart`].
#[derive(Clone, Debug)]
pub struct Series {
    /// Its legend entry.
    pub label: String,
    /// (x, y) pairs, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
    /// Its colour: a cluster palette index, or grey when negative.
    pub colour: i64,
}

/// Curves on logarithmic axes (speed-up against k, time against n), where a power law is a
/// straight line. Only positive values are drawn.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// The title above the plot.
    pub title: String,
    /// The x axis's name with its unit.
    pub x_label: String,
    /// The y axis's name with its unit.
    pub y_label: String,
    /// The curves.
    pub series: Vec<Series>,
}

impl LineChart {
    fn range(&self, pick: fn(&(f64, f64)) -> f64) -> (f64, f64) {
        let values = self.series.iter().flat_map(|s| s.points.iter().map(pick));
        let (lo, hi) = extent(values.filter(|&v| v > 0.0));
        if lo > 0.0 {
            (lo / 1.5, hi * 1.5)
        } else {
            (0.1, 10.0)
        }
    }
}

impl Figure for LineChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let (x0, x1) = self.range(|p| p.0);
        let (y0, y1) = self.range(|p| p.1);
        let mut chart = ChartBuilder::on(root)
            .caption(self.title.as_str(), TITLE)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .axis_desc_style(LABEL)
            .label_style(LEGEND)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for s in &self.series {
            let colour = cluster_color(s.colour);
            let points: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.0 > 0.0 && p.1 > 0.0)
                .collect();
            let drawn = match s.style {
                Style::Dashed => {
                    chart.draw_series(DashedLineSeries::new(points, 8, 6, colour.stroke_width(2)))?
                }
                Style::Points => {
                    chart.draw_series(points.into_iter().map(|p| Circle::new(p, 4, colour.filled())))?
                }
                Style::LineAndPoints => {
                    chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))?;
                    chart.draw_series(LineSeries::new(points, colour.stroke_width(2)))?
                }
            };
            // A marker for points, a short line segment otherwise.
            let (radius, length) = if s.style == Style::Points {
                (4, 10)
            } else {
                (0, 20)
            };
            drawn.label(s.label.as_str()).legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + Circle::new((10, 0), radius, colour.filled())
                    + PathElement::new(vec![(20 - length, 0), (length, 0)], colour.stroke_width(2))
            });
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// Points in the plane coloured by cluster, noise small and grey underneath (a map of
/// hotspots, a 2-D clustering).
#[derive(Clone, Debug)]
pub struct ClusterScatter {
    /// The title above the plot.
    pub title: String,
    /// The x axis's name with its unit.
    pub x_label: String,
    /// The y axis's name with its unit.
    pub y_label: String,
    /// (x, y) of each point.
    pub points: Vec<(f64, f64)>,
    /// Each point's cluster, negative for noise.
    pub labels: Vec<i64>,
}

impl Figure for ClusterScatter {
    fn size(&self) -> (u32, u32) {
        (1200, 700)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let (x0, x1) = extent(self.points.iter().map(|p| p.0));
        let (y0, y1) = extent(self.points.iter().map(|p| p.1));
        let mut chart = ChartBuilder::on(root)
            .caption(self.title.as_str(), TITLE)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .axis_desc_style(LABEL)
            .label_style(LEGEND)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let pairs = || self.points.iter().zip(&self.labels);
        chart.draw_series(
            pairs()
                .filter(|(_, &l)| l < 0)
                .map(|(&p, _)| Circle::new(p, 1, cluster_color(-1).filled())),
        )?;
        chart.draw_series(
            pairs()
                .filter(|(_, &l)| l >= 0)
                .map(|(&p, &l)| Circle::new(p, 3, cluster_color(l).filled())),
        )?;
        cluster_legend(&mut chart, &self.labels, "noise")?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// The reachability plot of an OPTICS ordering: one bar per point in order, as high as its
/// reachability distance and coloured by cluster (noise grey). Infinite reachabilities are
/// drawn to the top, lighter.
#[derive(Clone, Copy, Debug)]
pub struct Reachability<'a> {
    /// The OPTICS ordering (point indices).
    pub ordering: &'a [usize],
    /// Each point's reachability distance, by point index.
    pub reachability: &'a [f64],
    /// Each point's cluster, by point index.
    pub labels: &'a [i64],
}

impl Figure for Reachability<'_> {
    fn size(&self) -> (u32, u32) {
        (self.ordering.len().clamp(600, 1600) as u32 + 120, 560)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let n = self.ordering.len();
        let finite_max = self
            .reachability
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let top = if finite_max > 0.0 { finite_max * 1.05 } else { 1.0 };
        let mut chart = ChartBuilder::on(root)
            .caption("OPTICS reachability plot", TITLE)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..n.max(1) as f64, 0f64..top)?;
        chart
            .configure_mesh()
            .x_desc("position in the OPTICS ordering")
            .y_desc("reachability distance")
            .axis_desc_style(LABEL)
            .label_style(LEGEND)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart.draw_series(self.ordering.iter().enumerate().map(|(pos, &p)| {
            let r = self.reachability[p];
            let colour = cluster_color(self.labels[p]);
            let colour = if r.is_finite() {
                colour.to_rgba()
            } else {
                colour.mix(0.4)
            };
            let height = if r.is_finite() { r.min(top) } else { top };
            Rectangle::new([(pos as f64, 0.0), (pos as f64 + 1.0, height)], colour.filled())
        }))?;
        let labels: Vec<i64> = self.ordering.iter().map(|&p| self.labels[p]).collect();
        cluster_legend(&mut chart, &labels, "noise")?;
        if self.reachability.iter().any(|r| r.is_infinite()) {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
                .label("infinite (drawn to the top, lighter)")
                .legend(swatch(RGBColor(200, 200, 200)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// A functional prediction over one input, as MagmaClustR's `plot_magmaclust`: the 95 % band
/// `mean ± 1.96·√var`, each cluster's mean, the mixture mean, the observed points and, when
/// known, held-out points the prediction did not see.
#[derive(Clone, Copy, Debug)]
pub struct Prediction<'a> {
    /// The title above the plot.
    pub title: &'a str,
    /// The prediction inputs, sorted.
    pub inputs: &'a [f64],
    /// The mixture mean at each input.
    pub mean: &'a [f64],
    /// The mixture variance at each input.
    pub var: &'a [f64],
    /// Each cluster's mean at each input.
    pub cluster_means: &'a [Vec<f64>],
    /// The task's observed (input, output) points.
    pub observed: (&'a [f64], &'a [f64]),
    /// Held-out (input, output) points, drawn as open circles.
    pub held_out: Option<(&'a [f64], &'a [f64])>,
}

impl Figure for Prediction<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let sd: Vec<f64> = self.var.iter().map(|v| 1.96 * v.max(0.0).sqrt()).collect();
        let held = self.held_out.unwrap_or((&[], &[]));
        let (x0, x1) = extent(self.inputs.iter().chain(self.observed.0).chain(held.0).copied());
        let ys = self.mean.iter().zip(&sd).flat_map(|(m, s)| [m - s, m + s]);
        let (y0, y1) = extent(
            ys.chain(self.cluster_means.iter().flatten().copied())
                .chain(self.observed.1.iter().copied())
                .chain(held.1.iter().copied()),
        );
        let pad = 0.05 * (y1 - y0);
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, TITLE)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))?;
        chart
            .configure_mesh()
            .x_desc("input t")
            .y_desc("output y")
            .axis_desc_style(LABEL)
            .label_style(LEGEND)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let band_colour = RGBColor(200, 215, 240);
        let upper = self
            .inputs
            .iter()
            .zip(self.mean.iter().zip(&sd))
            .map(|(&x, (m, s))| (x, m + s));
        let lower = self
            .inputs
            .iter()
            .zip(self.mean.iter().zip(&sd))
            .map(|(&x, (m, s))| (x, m - s));
        let outline: Vec<(f64, f64)> = upper.chain(lower.rev()).collect();
        chart
            .draw_series(std::iter::once(Polygon::new(outline, band_colour.filled())))?
            .label("95 % band of the prediction")
            .legend(swatch(band_colour));
        for (k, m) in self.cluster_means.iter().enumerate() {
            let colour = cluster_color(k as i64);
            chart
                .draw_series(LineSeries::new(
                    self.inputs.iter().copied().zip(m.iter().copied()),
                    colour.stroke_width(1),
                ))?
                .label(format!("mean of cluster {k}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        }
        chart
            .draw_series(LineSeries::new(
                self.inputs.iter().copied().zip(self.mean.iter().copied()),
                BLACK.stroke_width(3),
            ))?
            .label("prediction (mixture mean)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(3)));
        let red = RGBColor(200, 30, 30);
        chart
            .draw_series(
                self.observed
                    .0
                    .iter()
                    .zip(self.observed.1)
                    .map(|(&x, &y)| Circle::new((x, y), 5, red.filled())),
            )?
            .label("observed points")
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, red.filled()));
        if !held.0.is_empty() {
            chart
                .draw_series(
                    held.0
                        .iter()
                        .zip(held.1)
                        .map(|(&x, &y)| Circle::new((x, y), 6, BLACK.stroke_width(2))),
                )?
                .label("held-out points (not seen by the prediction)")
                .legend(|(x, y)| Circle::new((x + 10, y), 6, BLACK.stroke_width(2)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// An icicle plot: rectangles in data coordinates, x across, y downwards, each coloured by a
/// cluster number (negative: grey), with a legend for the numbers that appear.
#[derive(Clone, Debug)]
pub struct Icicle {
    /// The title above the plot.
    pub title: String,
    /// The x axis's name with its unit.
    pub x_label: String,
    /// The y axis's name with its unit (it grows downwards).
    pub y_label: String,
    /// The x range.
    pub width: f64,
    /// The y range, from 0 at the top.
    pub depth: f64,
    /// (x0, y0, x1, y1, colour label) of each rectangle.
    pub boxes: Vec<(f64, f64, f64, f64, i64)>,
    /// Horizontal lines (x0, x1, y) joining a parent to its children.
    pub joins: Vec<(f64, f64, f64)>,
    /// The legend's name for the grey (negative) boxes.
    pub grey_name: String,
}

impl Figure for Icicle {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title.as_str(), TITLE)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            // A third more width on the right keeps the legend clear of the bands.
            .build_cartesian_2d(0f64..self.width.max(1.0) * 1.35, self.depth.max(1e-12)..0f64)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .axis_desc_style(LABEL)
            .label_style(LEGEND)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart.draw_series(
            self.boxes
                .iter()
                .map(|&(x0, y0, x1, y1, c)| Rectangle::new([(x0, y0), (x1, y1)], cluster_color(c).filled())),
        )?;
        chart.draw_series(
            self.joins
                .iter()
                .map(|&(x0, x1, y)| PathElement::new(vec![(x0, y), (x1, y)], BLACK.stroke_width(1))),
        )?;
        let labels: Vec<i64> = self.boxes.iter().map(|b| b.4).collect();
        cluster_legend(&mut chart, &labels, &self.grey_name)?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a PNG written by [`save`]: (width, height, RGB pixels).
    fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    /// Dark pixels (text, axes) in rows `y0..y1`.
    fn dark_pixels(png: &(u32, u32, Vec<u8>), y0: u32, y1: u32) -> usize {
        let w = png.0 as usize;
        (y0 as usize * w..y1 as usize * w)
            .filter(|&i| png.2[3 * i..3 * i + 3].iter().all(|&c| c < 80))
            .count()
    }

    #[test]
    fn ticks_read_as_people_write_numbers() {
        let cases = [
            (0.25, "0.25"),
            (2.0, "2"),
            (0.6000000000000001, "0.6"),
            (1500.0, "1500"),
        ];
        for (v, text) in cases
            .into_iter()
            .chain([(2e-4, "2e-4"), (1e6, "1e6"), (0.0, "0")])
        {
            assert_eq!(tick(&v), text);
        }
    }

    #[test]
    fn the_bundled_font_loads() {
        assert!(ab_glyph_font_ok());
    }

    fn ab_glyph_font_ok() -> bool {
        register_font();
        let style = TextStyle::from(TITLE);
        style
            .font
            .box_size("Reachability")
            .is_ok_and(|(w, h)| w > 50 && h > 10)
    }

    #[test]
    fn a_png_has_its_title_axes_and_legend_drawn_in_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.png");
        let figure = Reachability {
            ordering: &[2, 0, 1, 3],
            reachability: &[f64::INFINITY, 0.5, 0.2, 0.4],
            labels: &[0, 0, -1, 1],
        };
        figure.save(&p).unwrap();
        let png = read_png(&p);
        assert_eq!((png.0, png.1), figure.size());
        // The title band holds text; an empty band of the same height does not.
        assert!(dark_pixels(&png, 0, 40) > 100, "title drawn");
        assert!(dark_pixels(&png, png.1 - 30, png.1) > 100, "x-axis label drawn");
        // The same plot as SVG names its title, axes and legend entries.
        let s = dir.path().join("r.svg");
        figure.save(&s).unwrap();
        let svg = std::fs::read_to_string(&s).unwrap();
        for text in [
            "OPTICS reachability plot",
            "position in the OPTICS ordering",
            "reachability distance",
            "cluster 0",
            "cluster 1",
            "noise",
            "infinite (drawn to the top, lighter)",
        ] {
            assert!(svg.contains(text), "{text} missing from the SVG");
        }
    }

    #[test]
    fn a_line_chart_on_log_axes_names_every_series() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("c.svg");
        LineChart {
            title: "speed-up".into(),
            x_label: "k".into(),
            y_label: "speed-up (×)".into(),
            series: vec![
                Series {
                    label: "FasterPAM".into(),
                    points: vec![(2.0, 1.0), (20.0, 40.0), (200.0, 1000.0)],
                    style: Style::LineAndPoints,
                    colour: 0,
                },
                Series {
                    label: "slope 1".into(),
                    points: vec![(2.0, 1.0), (200.0, 100.0)],
                    style: Style::Dashed,
                    colour: -1,
                },
            ],
        }
        .save(&s)
        .unwrap();
        let svg = std::fs::read_to_string(&s).unwrap();
        for text in ["speed-up", "FasterPAM", "slope 1", "speed-up (×)"] {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    #[test]
    fn a_prediction_shows_its_held_out_points_and_a_scatter_its_noise() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("p.svg");
        let x = [0.0, 1.0, 2.0, 3.0];
        Prediction {
            title: "MagmaClust prediction",
            inputs: &x,
            mean: &[0.0, 1.0, 0.5, 0.2],
            var: &[0.1, 0.2, 0.3, 0.4],
            cluster_means: &[vec![0.0, 1.0, 1.0, 1.0], vec![0.0, 0.0, 0.0, 0.0]],
            observed: (&[0.0, 1.0], &[0.1, 0.9]),
            held_out: Some((&[2.5], &[0.4])),
        }
        .save(&s)
        .unwrap();
        let svg = std::fs::read_to_string(&s).unwrap();
        for text in [
            "held-out points",
            "observed points",
            "mean of cluster 1",
            "95 % band",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        let m = dir.path().join("m.png");
        let scatter = ClusterScatter {
            title: "hotspots".into(),
            x_label: "longitude (°)".into(),
            y_label: "latitude (°)".into(),
            points: (0..30).map(|i| (i as f64, (i % 7) as f64)).collect(),
            labels: (0..30).map(|i| i % 11 - 1).collect(),
        };
        scatter.save(&m).unwrap();
        let png = read_png(&m);
        assert_eq!((png.0, png.1), (1200, 700));
        assert!(dark_pixels(&png, 0, 40) > 50, "title drawn");
    }

    #[test]
    fn an_unwritable_path_is_an_error_not_a_panic() {
        let err = ClusterScatter {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            points: vec![(0.0, 0.0)],
            labels: vec![0],
        }
        .save("/nonexistent-dir/x.png")
        .unwrap_err();
        assert!(err.to_string().contains("nonexistent-dir"), "{err}");
    }
}
