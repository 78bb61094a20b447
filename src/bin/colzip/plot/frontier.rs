//! Compression ratio against speed, a point per measurement in several series (colzip
//! on the GPU, on the CPU, peers): the picture `colzip bench --plot` draws of the
//! ratio/speed frontier. Compression on the left, decompression on the right, speeds on
//! one log axis for both. Each series has its own marker and colour, named in a legend
//! under the panels, and its frontier (the points no other point of the series beats in
//! both ratio and speed) joined by a line.

use std::path::Path;

use plotters::prelude::*;

use colzip::{Error, Result};

use super::{LABEL_FONT, LabelBox, draw_labels, place_labels, save};

/// One measurement: its label (codec and column) and figures; a speed that is not a
/// positive number (`NaN`: not measured) leaves the point out of that panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub label: String,
    pub ratio: f64,
    pub compress_gbps: f64,
    pub decompress_gbps: f64,
}

/// Points drawn alike, under one name in the legend (which says what form of GB/s they
/// are). A series' marker and colour follow its place in the list, so an empty series
/// keeps the others' looks (it has no legend entry).
#[derive(Clone, Debug, PartialEq)]
pub struct PointSeries {
    pub name: String,
    pub points: Vec<Point>,
}

/// The titles of the two panels' speed axes, which name the form of GB/s.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedAxes {
    pub compress: String,
    pub decompress: String,
}

/// A panel with more points than this labels only each series' frontier: hundreds of
/// labels (the whole lzss grid on seven columns) would cover the points.
pub const LABEL_ALL_UP_TO: usize = 40;

/// Draws `series` under `title` into the SVG file `path`, written whole or not at all;
/// an existing file is replaced only with `overwrite`.
pub fn plot_frontier(
    series: &[PointSeries],
    axes: &SpeedAxes,
    title: &str,
    path: &Path,
    overwrite: bool,
) -> Result<()> {
    let svg = render_frontier(series, axes, title)
        .map_err(|e| Error::format(format!("cannot draw {}: {e}", path.display())))?;
    save(path, &svg, overwrite)
}

/// How each series' points look: a marker shape and a colour, by the series' place.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Marker {
    Disc,
    Square,
    Triangle,
}

/// Okabe and Ito's colours, told apart with most colour vision deficiencies.
const COLOURS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
];
const MARKERS: [Marker; 3] = [Marker::Disc, Marker::Square, Marker::Triangle];

fn style_of(series: usize) -> (Marker, RGBColor) {
    (
        MARKERS[series % MARKERS.len()],
        COLOURS[series % COLOURS.len()],
    )
}

/// The half-width of a marker, in pixels.
const MARKER_SIZE: i32 = 5;
/// Picture size, and the legend's strip at its foot.
const WIDTH: u32 = 1280;
const HEIGHT: u32 = 620;
const LEGEND_HEIGHT: u32 = 36;

/// The marker of a series at pixel `at` of `area`.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    marker: Marker,
    colour: RGBColor,
    at: (i32, i32),
) -> std::result::Result<(), String> {
    let (x, y) = at;
    let drawn = match marker {
        Marker::Disc => area.draw(&Circle::new(at, MARKER_SIZE, colour.filled())),
        Marker::Square => area.draw(&Rectangle::new(
            [
                (x - MARKER_SIZE + 1, y - MARKER_SIZE + 1),
                (x + MARKER_SIZE - 1, y + MARKER_SIZE - 1),
            ],
            colour.stroke_width(2),
        )),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, MARKER_SIZE + 1, colour.filled())),
    };
    drawn.map_err(|e| e.to_string())
}

/// The indices of `points`' frontier: those that no other point matches or beats in both
/// ratio and speed (beating it in one), in order of speed, fastest first.
pub fn frontier(points: &[(f64, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    // Fastest first, the higher ratio first among equal speeds.
    order.sort_by(|&a, &b| {
        points[b]
            .0
            .total_cmp(&points[a].0)
            .then(points[b].1.total_cmp(&points[a].1))
    });
    let mut best_ratio = f64::NEG_INFINITY;
    let mut kept = Vec::new();
    for i in order {
        if points[i].1 > best_ratio {
            best_ratio = points[i].1;
            kept.push(i);
        }
    }
    kept
}

/// The SVG text of [`plot_frontier`]'s picture; an error when no point has a speed.
pub fn render_frontier(
    series: &[PointSeries],
    axes: &SpeedAxes,
    title: &str,
) -> std::result::Result<String, String> {
    let speed = |p: &Point, panel: usize| {
        let s = if panel == 0 {
            p.compress_gbps
        } else {
            p.decompress_gbps
        };
        (s.is_finite() && s > 0.0 && p.ratio.is_finite()).then_some(s)
    };
    let speeds: Vec<f64> = series
        .iter()
        .flat_map(|s| &s.points)
        .flat_map(|p| [speed(p, 0), speed(p, 1)])
        .flatten()
        .collect();
    if speeds.is_empty() {
        return Err("nothing was measured, so there is nothing to plot".to_string());
    }
    let low = speeds.iter().copied().fold(f64::MAX, f64::min) / 2.0;
    let high = speeds.iter().copied().fold(f64::MIN, f64::max) * 2.0;
    let max_ratio = series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.ratio)
        .filter(|r| r.is_finite())
        .fold(1.0, f64::max)
        * 1.15;

    let mut svg = String::new();
    {
        let whole = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let fail = |e: &dyn std::fmt::Display| e.to_string();
        whole.fill(&WHITE).map_err(|e| fail(&e))?;
        let root = whole
            .titled(title, ("sans-serif", 22))
            .map_err(|e| fail(&e))?;
        let (_, root_h) = root.dim_in_pixel();
        let (plots, legend) = root.split_vertically(root_h - LEGEND_HEIGHT);
        let panels = plots.split_evenly((1, 2));
        let font = ("sans-serif", LABEL_FONT).into_font().color(&BLACK);
        for (panel_index, (panel, axis)) in panels
            .iter()
            .zip([&axes.compress, &axes.decompress])
            .enumerate()
        {
            let drawn: usize = series
                .iter()
                .flat_map(|s| &s.points)
                .filter(|p| speed(p, panel_index).is_some())
                .count();
            let all_labelled = drawn <= LABEL_ALL_UP_TO;
            let caption = match (panel_index, all_labelled) {
                (0, true) => "compression".to_string(),
                (0, false) => "compression (labels on the frontiers only)".to_string(),
                (_, true) => "decompression".to_string(),
                (_, false) => "decompression (labels on the frontiers only)".to_string(),
            };
            let mut chart = ChartBuilder::on(panel)
                .caption(caption, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(50)
                .build_cartesian_2d((low..high).log_scale(), 0.0..max_ratio)
                .map_err(|e| fail(&e))?;
            chart
                .configure_mesh()
                .x_desc(axis.as_str())
                .y_desc("ratio (uncompressed / compressed)")
                .draw()
                .map_err(|e| fail(&e))?;
            let mut labels: Vec<(&str, (i32, i32))> = Vec::new();
            let mut unlabelled: Vec<(i32, i32)> = Vec::new();
            for (i, s) in series.iter().enumerate() {
                let (marker, colour) = style_of(i);
                let shown: Vec<(&Point, f64)> = s
                    .points
                    .iter()
                    .filter_map(|p| speed(p, panel_index).map(|v| (p, v)))
                    .collect();
                let pixels: Vec<(i32, i32)> = shown
                    .iter()
                    .map(|(p, v)| chart.backend_coord(&(*v, p.ratio)))
                    .collect();
                let best = frontier(&shown.iter().map(|(p, v)| (*v, p.ratio)).collect::<Vec<_>>());
                if best.len() > 1 {
                    let line: Vec<(i32, i32)> = best.iter().map(|&k| pixels[k]).collect();
                    whole
                        .draw(&PathElement::new(line, colour.mix(0.5).stroke_width(1)))
                        .map_err(|e| fail(&e))?;
                }
                for (k, ((point, _), &at)) in shown.iter().zip(&pixels).enumerate() {
                    draw_marker(&whole, marker, colour, at)?;
                    if all_labelled || best.contains(&k) {
                        labels.push((point.label.as_str(), at));
                    } else {
                        unlabelled.push(at);
                    }
                }
            }
            let (xs, ys) = chart.plotting_area().get_pixel_range();
            let area = LabelBox {
                x: xs.start,
                y: ys.start,
                w: xs.end - xs.start,
                h: ys.end - ys.start,
            };
            let texts: Vec<&str> = labels.iter().map(|(text, _)| *text).collect();
            let points: Vec<(i32, i32)> = labels.iter().map(|(_, at)| *at).collect();
            let placed = place_labels(texts.iter().copied(), &points, &unlabelled, area);
            draw_labels(&whole, &texts, &points, &placed, &font).map_err(|e| fail(&e))?;
        }
        // The legend: a marker and the series' name each, in a row under the panels.
        let (_, legend_top) = legend.get_base_pixel();
        let mut x = 60;
        let y = legend_top + LEGEND_HEIGHT as i32 / 2;
        for (i, s) in series.iter().enumerate() {
            if s.points.is_empty() {
                continue;
            }
            let (marker, colour) = style_of(i);
            draw_marker(&whole, marker, colour, (x, y))?;
            let text = LabelBox::of_text(&s.name, (0, 0));
            whole
                .draw(&Text::new(
                    s.name.clone(),
                    (x + 2 * MARKER_SIZE, y - text.h / 2),
                    font.clone(),
                ))
                .map_err(|e| fail(&e))?;
            x += 2 * MARKER_SIZE + text.w + 40;
        }
        whole.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::super::svg_texts;
    use super::*;

    #[test]
    fn the_frontier_is_the_points_nothing_beats_in_both() {
        // (speed, ratio): 1 beats 0 in both; 2 is fastest; 3 has the best ratio; 4 ties 2's
        // speed with a lower ratio.
        let points = [(1.0, 2.0), (2.0, 3.0), (10.0, 1.5), (0.5, 6.0), (10.0, 1.0)];
        assert_eq!(frontier(&points), vec![2, 1, 3]);
        assert!(frontier(&[]).is_empty());
    }

    fn point(label: &str, ratio: f64, c: f64, d: f64) -> Point {
        Point {
            label: label.to_string(),
            ratio,
            compress_gbps: c,
            decompress_gbps: d,
        }
    }

    fn axes() -> SpeedAxes {
        SpeedAxes {
            compress: "compression kernel GB/s (log scale)".to_string(),
            decompress: "decompression kernel GB/s (log scale)".to_string(),
        }
    }

    #[test]
    fn each_series_has_its_marker_and_a_legend_entry() {
        let series = vec![
            PointSeries {
                name: "colzip on the GPU".to_string(),
                points: vec![
                    point("gmatch", 2.0, 50.0, 200.0),
                    point("bwt", 4.0, 1.0, 3.0),
                ],
            },
            PointSeries {
                name: "colzip on the CPU".to_string(),
                points: vec![point("gmatch", 2.0, 2.0, f64::NAN)],
            },
            PointSeries {
                name: "peers".to_string(),
                points: vec![point("nvcomp-lz4", 2.1, 80.0, 300.0)],
            },
        ];
        let svg = render_frontier(&series, &axes(), "three series").unwrap();
        // Two GPU points in each panel and the legend's disc.
        assert_eq!(svg.matches("<circle").count(), 5, "{svg}");
        // The peer in each panel and the legend's triangle.
        assert_eq!(svg.matches("<polygon").count(), 3, "{svg}");
        for text in [
            "colzip on the GPU",
            "colzip on the CPU",
            "peers",
            "compression kernel GB/s (log scale)",
            "decompression kernel GB/s (log scale)",
        ] {
            assert!(svg.contains(text), "{text}");
        }
        // The CPU point's decompression is not measured: one label in one panel.
        let texts = svg_texts(&svg);
        let count = |text: &str| texts.iter().filter(|t| **t == text).count();
        assert_eq!(count("nvcomp-lz4"), 2, "{texts:?}");
        assert_eq!(count("gmatch"), 3, "{texts:?}");
        let nothing = vec![PointSeries {
            name: "none".to_string(),
            points: vec![point("x", 2.0, f64::NAN, 0.0)],
        }];
        assert!(render_frontier(&nothing, &axes(), "none").is_err());
    }

    #[test]
    fn many_points_label_only_each_series_frontier() {
        let points: Vec<Point> = (0..60)
            .map(|i| {
                // Pairs of one speed: the even one, of the higher ratio, on the frontier
                // (ratio falls as speed rises).
                let speed = 1.0 + (i / 2) as f64;
                let ratio = if i % 2 == 0 {
                    40.0 / speed
                } else {
                    10.0 / speed
                };
                point(&format!("p{i}"), ratio, speed, speed)
            })
            .collect();
        let series = vec![PointSeries {
            name: "many".to_string(),
            points,
        }];
        let svg = render_frontier(&series, &axes(), "many").unwrap();
        let texts = svg_texts(&svg);
        let labelled = (0..60)
            .filter(|i| texts.contains(&format!("p{i}").as_str()))
            .collect::<Vec<_>>();
        assert_eq!(labelled, (0..60).step_by(2).collect::<Vec<_>>());
        assert!(svg.contains("labels on the frontiers only"));
    }
}
