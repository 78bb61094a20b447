//! The pictures `--plot FILE.svg` draws, as SVG by the `plotters` crate: codecs as
//! compression ratio against speed ([`plot_codecs`]: `colzip tpch`), the same a point
//! per measurement in series ([`frontier`]: `colzip bench`, with peers), and grouped
//! bars ([`plot_bars`]: seconds per query and store in `colzip queries`). It knows points
//! and series only, not the measurements they come from. Each picture is drawn in memory
//! and written whole or not at all ([`save`]).

pub mod frontier;

use std::io::Write;
use std::path::Path;

use plotters::prelude::*;

use colzip::{Error, Result};

/// An error unless `path` names an SVG file in a directory that exists, and (without
/// `overwrite`) names nothing yet: what a command checks before it runs, not after
/// minutes of it.
pub fn check_plot_path(path: &Path, overwrite: bool) -> Result<()> {
    if !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
    {
        return Err(Error::format(format!(
            "{}: plots are written as SVG (name the file *.svg)",
            path.display()
        )));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Error::format(format!(
            "cannot write the plot {}: its directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    // `symlink_metadata`: a symlink counts as existing, even a dangling one.
    if !overwrite && path.symlink_metadata().is_ok() {
        return Err(Error::format(format!(
            "{} exists (use --force to overwrite)",
            path.display()
        )));
    }
    Ok(())
}

/// Writes the picture `svg` to `path` through a temporary file renamed into place, so
/// that a failed or interrupted run leaves no half-written picture; an existing file is
/// replaced only with `overwrite`.
pub fn save(path: &Path, svg: &str, overwrite: bool) -> Result<()> {
    colzip::archive::write_atomically(path, overwrite, |mut file| {
        Ok(file.write_all(svg.as_bytes())?)
    })
}

/// One codec's point in [`plot_codecs`]: its label, compression ratio and speeds.
#[derive(Clone, Debug, PartialEq)]
pub struct CodecPoint {
    pub name: String,
    pub ratio: f64,
    pub compress_gbps: f64,
    pub decompress_gbps: f64,
}

/// Draws `totals` into the SVG file `path`, under `title`: one point per codec, ratio
/// against compression GB/s on the left and decompression GB/s on the right (log axes).
pub fn plot_codecs(totals: &[CodecPoint], path: &Path, title: &str) -> Result<()> {
    check_plot_path(path, true)?;
    if totals.is_empty() {
        return Err(Error::format(
            "nothing was measured, so there is nothing to plot",
        ));
    }
    let fail =
        |e: &dyn std::fmt::Display| Error::format(format!("cannot draw {}: {e}", path.display()));
    let mut svg = String::new();
    let whole = SVGBackend::with_string(&mut svg, (1100, 480)).into_drawing_area();
    whole.fill(&WHITE).map_err(|e| fail(&e))?;
    let root = whole
        .titled(title, ("sans-serif", 22))
        .map_err(|e| fail(&e))?;
    let panels = root.split_evenly((1, 2));
    let max_ratio = totals.iter().map(|t| t.ratio).fold(1.0, f64::max) * 1.15;
    let speeds = totals
        .iter()
        .flat_map(|t| [t.compress_gbps, t.decompress_gbps])
        .filter(|s| *s > 0.0);
    let (low, high) = speeds.fold((f64::MAX, f64::MIN), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let (low, high) = if low <= high {
        (low / 2.0, high * 2.0)
    } else {
        (0.01, 100.0)
    };
    let font = ("sans-serif", LABEL_FONT).into_font().color(&BLACK);
    for (panel, (name, speed)) in panels.iter().zip([
        (
            "compression",
            (|t: &CodecPoint| t.compress_gbps) as fn(&CodecPoint) -> f64,
        ),
        ("decompression", |t: &CodecPoint| t.decompress_gbps),
    ]) {
        let mut chart = ChartBuilder::on(panel)
            .caption(name, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((low..high).log_scale(), 0.0..max_ratio)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc(format!("{name} GB/s (log scale)"))
            .y_desc("ratio")
            .draw()
            .map_err(|e| fail(&e))?;
        // Points in pixels of the whole picture, where the labels are placed.
        let points: Vec<(i32, i32)> = totals
            .iter()
            .map(|t| chart.backend_coord(&(speed(t).max(low), t.ratio)))
            .collect();
        for (i, total) in totals.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let at = (speed(total).max(low), total.ratio);
            chart
                .draw_series([Circle::new(at, POINT_RADIUS, color.filled())])
                .map_err(|e| fail(&e))?;
        }
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let labels = place_labels(
            totals.iter().map(|t| t.name.as_str()),
            &points,
            &[],
            LabelBox {
                x: xs.start,
                y: ys.start,
                w: xs.end - xs.start,
                h: ys.end - ys.start,
            },
        );
        let texts: Vec<&str> = totals.iter().map(|t| t.name.as_str()).collect();
        draw_labels(&whole, &texts, &points, &labels, &font).map_err(|e| fail(&e))?;
    }
    whole.present().map_err(|e| fail(&e))?;
    // The drawing areas hold the text until they are dropped.
    drop((panels, root, whole));
    save(path, &svg, true)
}

/// The size of the codecs' labels, and the radius of their points, in pixels.
const LABEL_FONT: f64 = 14.0;
const POINT_RADIUS: i32 = 6;

/// A rectangle in pixels: left, top, width and height.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LabelBox {
    x: i32,
    y: i32,
    w: i32,
    h: i32,
}

impl LabelBox {
    /// The box a label of `text` takes with its top left corner at `(x, y)`. SVG leaves
    /// the glyphs to the viewer, so this is an estimate, on the wide side: plotters
    /// writes the font as `LABEL_FONT / 1.24` pixels, and a sans-serif character is at
    /// most about 0.62 of that wide on average.
    fn of_text(text: &str, (x, y): (i32, i32)) -> LabelBox {
        let chars = text.chars().count() as f64;
        LabelBox {
            x,
            y,
            w: (chars * LABEL_FONT / 1.24 * 0.62).ceil() as i32,
            h: LABEL_FONT as i32,
        }
    }

    fn overlaps(&self, other: &LabelBox) -> bool {
        self.x < other.x + other.w
            && other.x < self.x + self.w
            && self.y < other.y + other.h
            && other.y < self.y + self.h
    }

    fn inside(&self, area: &LabelBox) -> bool {
        self.x >= area.x
            && self.y >= area.y
            && self.x + self.w <= area.x + area.w
            && self.y + self.h <= area.y + area.h
    }

    /// Whether the box is where a label goes when nothing is in its way: just right or
    /// left of `point`, centred on it.
    fn beside(&self, point: (i32, i32)) -> bool {
        self.y == point.1 - self.h / 2
            && (self.x == point.0 + LABEL_GAP || self.x + self.w == point.0 - LABEL_GAP)
    }
}

/// Draws each of `texts` in its box of `placed` on `area` (whose pixels `points` and
/// `placed` are in), joined to its point of `points` by a line where it was moved away.
fn draw_labels<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    texts: &[&str],
    points: &[(i32, i32)],
    placed: &[LabelBox],
    font: &TextStyle,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for ((text, &point), label) in texts.iter().zip(points).zip(placed) {
        if !label.beside(point) {
            let end = (
                if label.x > point.0 {
                    label.x
                } else {
                    label.x + label.w
                },
                label.y + label.h / 2,
            );
            area.draw(&PathElement::new(vec![point, end], BLACK.mix(0.4)))?;
        }
        area.draw(&Text::new(
            text.to_string(),
            (label.x, label.y),
            font.clone(),
        ))?;
    }
    Ok(())
}

/// How far a label starts from its point's centre.
const LABEL_GAP: i32 = POINT_RADIUS + 3;

/// Where each label goes, in order: right of its point, or left where the right runs
/// out of `area`, moved down or up a line at a time until it overlaps neither a label
/// placed before it nor any point (of `points`, or of `others`: points without a
/// label). Codecs of similar speed and ratio would otherwise print their names over each
/// other. A label that fits nowhere (dozens of points in one spot) stays right of its
/// point.
fn place_labels<'a>(
    texts: impl Iterator<Item = &'a str>,
    points: &[(i32, i32)],
    others: &[(i32, i32)],
    area: LabelBox,
) -> Vec<LabelBox> {
    let dots: Vec<LabelBox> = points
        .iter()
        .chain(others)
        .map(|&(x, y)| LabelBox {
            x: x - POINT_RADIUS,
            y: y - POINT_RADIUS,
            w: 2 * POINT_RADIUS + 1,
            h: 2 * POINT_RADIUS + 1,
        })
        .collect();
    let mut placed: Vec<LabelBox> = Vec::new();
    for (text, &(px, py)) in texts.zip(points) {
        let size = LabelBox::of_text(text, (0, 0));
        let right = px + LABEL_GAP;
        let left = px - LABEL_GAP - size.w;
        let free = |b: &LabelBox| {
            b.inside(&area)
                && !placed.iter().any(|p| p.overlaps(b))
                && !dots.iter().any(|d| d.overlaps(b))
        };
        let line = size.h + 2;
        let choice = (0..area.h / line + 1)
            .flat_map(|k| if k == 0 { vec![0] } else { vec![k, -k] })
            .flat_map(|k| {
                let y = py - size.h / 2 + k * line;
                [(right, y), (left, y)]
            })
            .map(|at| LabelBox::of_text(text, at))
            .find(|b| free(b))
            .unwrap_or_else(|| LabelBox::of_text(text, (right, py - size.h / 2)));
        placed.push(choice);
    }
    placed
}

#[cfg(feature = "datafusion")]
/// One series of a bar chart: a name (the legend's) and a value per group.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
}

#[cfg(feature = "datafusion")]
/// Draws grouped bars into the SVG file `path`: one group per label of `groups`, one bar
/// per series in each, coloured by series (the legend names them); `y_desc` names the
/// values. `colzip queries --plot` draws seconds per query and store this way.
pub fn plot_bars(
    groups: &[String],
    series: &[Series],
    y_desc: &str,
    path: &Path,
    title: &str,
) -> Result<()> {
    check_plot_path(path, true)?;
    if groups.is_empty() || series.is_empty() {
        return Err(Error::format(
            "nothing was measured, so there is nothing to plot",
        ));
    }
    if let Some(bad) = series.iter().find(|s| s.values.len() != groups.len()) {
        return Err(Error::format(format!(
            "series '{}' has {} values for {} groups",
            bad.name,
            bad.values.len(),
            groups.len()
        )));
    }
    let fail =
        |e: &dyn std::fmt::Display| Error::format(format!("cannot draw {}: {e}", path.display()));
    let width = (groups.len() as u32 * (24 + 14 * series.len() as u32)).clamp(640, 2400);
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (width, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let top = if max > 0.0 { max * 1.15 } else { 1.0 };
    let n = groups.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top)
        .map_err(|e| fail(&e))?;
    // One label per group, at its centre (the whole numbers of the x axis).
    let label = |x: &f64| {
        let i = x.round();
        match groups.get(i as usize) {
            Some(name) if (x - i).abs() < 1e-6 && i >= 0.0 => name.clone(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&label)
        .y_desc(y_desc)
        .draw()
        .map_err(|e| fail(&e))?;
    let bar = 0.8 / series.len() as f64;
    for (j, s) in series.iter().enumerate() {
        let color = Palette99::pick(j).to_rgba();
        chart
            .draw_series(s.values.iter().enumerate().map(|(i, &v)| {
                let left = i as f64 - 0.4 + j as f64 * bar;
                let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
                Rectangle::new([(left, 0.0), (left + bar, v)], color.filled())
            }))
            .map_err(|e| fail(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    drop((chart, root));
    save(path, &svg, true)
}

/// The texts of an SVG file's `<text>` elements, in order (plotters writes each on a line
/// of its own inside the element).
#[cfg(test)]
pub fn svg_texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .filter_map(|piece| {
            let (_, rest) = piece.split_once('>')?;
            Some(rest.split("</text>").next()?.trim())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_are_drawn_as_svg() {
        let point = |name: &str, ratio, compress_gbps, decompress_gbps| CodecPoint {
            name: name.into(),
            ratio,
            compress_gbps,
            decompress_gbps,
        };
        let totals = vec![point("gmatch", 3.0, 2.5, 9.0), point("bwt", 6.0, 0.1, 0.3)];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codecs.svg");
        plot_codecs(&totals, &path, "TPC-H SF 0.01").unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("<svg"));
        assert!(plot_codecs(&[], &path, "none").is_err());
        assert!(check_plot_path(&dir.path().join("codecs.png"), true).is_err());
        assert!(check_plot_path(&path, false).is_err());
        assert!(check_plot_path(&path, true).is_ok());
    }

    /// The labels' boxes in an SVG file: each `<text x=".." y="..">NAME</text>` whose
    /// text is one of `names`.
    fn label_boxes(svg: &str, names: &[&str]) -> Vec<(String, LabelBox)> {
        let attribute = |tag: &str, name: &str| -> i32 {
            let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            let end = start + tag[start..].find('"').unwrap();
            tag[start..end].parse().unwrap()
        };
        svg.split("<text")
            .skip(1)
            .filter_map(|piece| {
                let (tag, rest) = piece.split_once('>')?;
                let text = rest.split("</text>").next()?.trim();
                names.contains(&text).then(|| {
                    let at = (attribute(tag, "x"), attribute(tag, "y"));
                    (text.to_string(), LabelBox::of_text(text, at))
                })
            })
            .collect()
    }

    #[test]
    fn labels_of_codecs_measured_alike_do_not_overlap() {
        // Six codecs within a few pixels of each other in both panels, and one far away.
        let names = ["lzss", "gmatch", "snap", "zstd -1", "lz4", "intpack", "bwt"];
        let totals: Vec<CodecPoint> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (ratio, speed) = if *name == "bwt" {
                    (6.0, 0.1)
                } else {
                    (2.0 + i as f64 * 0.01, 1.0 + i as f64 * 0.01)
                };
                CodecPoint {
                    name: name.to_string(),
                    ratio,
                    compress_gbps: speed,
                    decompress_gbps: speed * 3.0,
                }
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codecs.svg");
        plot_codecs(&totals, &path, "alike").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let boxes = label_boxes(&svg, &names);
        assert_eq!(boxes.len(), 2 * names.len(), "{svg}");
        for (i, (a, one)) in boxes.iter().enumerate() {
            for (b, other) in &boxes[i + 1..] {
                assert!(!one.overlaps(other), "{a} {one:?} overlaps {b} {other:?}");
            }
        }
        // Moved labels are joined to their points.
        assert!(svg.contains("<polyline"), "{svg}");
    }

    #[test]
    fn labels_stay_inside_the_plot_and_beside_a_lone_point() {
        let area = LabelBox {
            x: 0,
            y: 0,
            w: 400,
            h: 300,
        };
        // Alone, right of the point; at the right edge, left of it.
        let placed = place_labels(
            ["gmatch", "bwt"].into_iter(),
            &[(100, 150), (395, 40)],
            &[],
            area,
        );
        assert!(
            placed[0].beside((100, 150)) && placed[0].x > 100,
            "{placed:?}"
        );
        assert!(
            placed[1].beside((395, 40)) && placed[1].x < 395,
            "{placed:?}"
        );
        // Ten at one point: all inside, none over another or over the point.
        let texts = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"];
        let placed = place_labels(texts.into_iter(), &[(200, 150); 10], &[], area);
        for (i, one) in placed.iter().enumerate() {
            assert!(one.inside(&area), "{one:?}");
            assert!(placed[i + 1..].iter().all(|other| !one.overlaps(other)));
        }
    }

    #[cfg(feature = "datafusion")]
    #[test]
    fn bars_are_drawn_as_svg() {
        let groups = vec!["Q1".to_string(), "Q6".to_string()];
        let series = vec![
            Series {
                name: "memory".into(),
                values: vec![0.40, 0.05],
            },
            Series {
                name: "compressed".into(),
                values: vec![0.55, 0.09],
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queries.svg");
        plot_bars(&groups, &series, "seconds", &path, "TPC-H SF 0.01").unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("<svg"));
    }
}
