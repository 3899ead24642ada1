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
