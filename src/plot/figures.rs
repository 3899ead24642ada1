//! The figures: curves on log axes, clustered points, the OPTICS reachability plot, a
//! MagmaClust prediction and the icicle plot of the HDBSCAN condensed tree.

use super::{
    cluster_color, cluster_legend, extent, legend, swatch, tick, Drawn, Figure, LABEL, LEGEND, TITLE,
};
use plotters::coord::Shift;
use plotters::prelude::*;

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
        // Two fifths more width on the right keep the legend clear of the points.
        let mut chart = ChartBuilder::on(root)
            .caption(self.title.as_str(), TITLE)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1 + 0.4 * (x1 - x0), y0..y1)?;
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
