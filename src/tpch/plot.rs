//! The picture codecs are compared by: compression ratio against speed, one point per
//! codec, compression on the left and decompression on the right (GB/s on a log axis).
//! SVG, drawn by the `plotters` crate.

use std::path::Path;

use plotters::prelude::*;

use super::report::CodecSummary;
use crate::{Error, Result};

/// An error unless `path` names an SVG file (what a command checks before it runs).
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
    Ok(())
}

/// Draws `totals` into the SVG file `path`, under `title`.
///
/// ```
/// use colzip::tpch::{CodecSummary, plot_codecs};
/// let totals = vec![
///     CodecSummary { codec: "gmatch".into(), columns: 16, raw_bytes: 9_000, compressed_bytes: 3_000,
///                    ratio: 3.0, compress_gbps: 2.5, decompress_gbps: 9.0 },
///     CodecSummary { codec: "bwt".into(), columns: 16, raw_bytes: 9_000, compressed_bytes: 1_500,
///                    ratio: 6.0, compress_gbps: 0.1, decompress_gbps: 0.3 },
/// ];
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("codecs.svg");
/// plot_codecs(&totals, &path, "TPC-H SF 0.01")?;
/// assert!(std::fs::read_to_string(&path)?.contains("<svg"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plot_codecs(totals: &[CodecSummary], path: &Path, title: &str) -> Result<()> {
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
            (|t: &CodecSummary| t.compress_gbps) as fn(&CodecSummary) -> f64,
        ),
        ("decompression", |t: &CodecSummary| t.decompress_gbps),
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
                    total.codec.clone(),
                    at,
                    ("sans-serif", 14).into_font().color(&BLACK),
                )])
                .map_err(|e| fail(&e))?;
        }
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
