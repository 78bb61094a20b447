//! The pictures `--plot FILE.svg` draws, as SVG by the `plotters` crate: codecs as
//! compression ratio against speed ([`plot_codecs`]: `colzip tpch` and `colzip bench`),
//! and grouped bars ([`plot_bars`]: seconds per query and store in `colzip queries`).
//! It knows points and series only, not the measurements they come from.

use std::path::Path;

use plotters::prelude::*;

use colzip::{Error, Result};

/// An error unless `path` names an SVG file in a directory that exists (what a command
/// checks before it runs, not after minutes of it).
pub fn check_plot_path(path: &Path) -> Result<()> {
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
    Ok(())
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
    check_plot_path(path)?;
    if totals.is_empty() {
        return Err(Error::format(
            "nothing was measured, so there is nothing to plot",
        ));
    }
    let fail =
        |e: &dyn std::fmt::Display| Error::format(format!("cannot draw {}: {e}", path.display()));
    let root = SVGBackend::new(path, (1100, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let root = root
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
        for (i, total) in totals.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let at = (speed(total).max(low), total.ratio);
            chart
                .draw_series([Circle::new(at, 6, color.filled())])
                .map_err(|e| fail(&e))?;
            chart
                .draw_series([Text::new(
                    total.name.clone(),
                    at,
                    ("sans-serif", 14).into_font().color(&BLACK),
                )])
                .map_err(|e| fail(&e))?;
        }
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(())
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
    check_plot_path(path)?;
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
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
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
    Ok(())
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
        assert!(check_plot_path(&dir.path().join("codecs.png")).is_err());
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
