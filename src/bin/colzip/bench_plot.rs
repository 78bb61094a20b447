//! `colzip bench --plot FILE.svg [--peers FILE.json]…`: the bench's rows, and the peers'
//! rows on the same columns, as the series of the ratio/speed picture
//! ([`crate::plot::frontier`]). colzip's GPU rows carry kernel GB/s; its CPU rows carry
//! wall-clock GB/s on all cores, never a kernel figure, so they are a series of their own,
//! named so in the legend and on the axes; the peers' figures are device-to-device calls
//! with the device synchronised around each (`peers.py`: data resident on the GPU, the
//! form comparable with colzip's kernel figures), a third series.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use colzip::Result;
use colzip::harness::bench::BenchRow;

use crate::peers::{PeerRow, read_peers};
use crate::plot::check_plot_path;
use crate::plot::frontier::{Point, PointSeries, SpeedAxes, plot_frontier};

/// The legend's names of the three series, which say what form of GB/s each is.
pub const GPU_SERIES: &str = "colzip on the GPU (kernel GB/s)";
pub const CPU_SERIES: &str = "colzip on the CPU (wall-clock GB/s, all cores)";
pub const PEER_SERIES: &str = "peers (GB/s of device-to-device calls)";

/// A plot to draw once the bench has run: checked, with the peers' rows read, before it.
#[derive(Debug)]
pub struct BenchPlot {
    path: PathBuf,
    overwrite: bool,
    peers: Vec<PeerRow>,
    /// What the peers files held that is not drawn, for stderr.
    notes: Vec<String>,
}

impl BenchPlot {
    /// Checks that the plot can be written to `path` (an SVG name in a directory that
    /// exists; nothing there yet unless `overwrite`) and reads `peers_files`: a bad path
    /// or peers file fails now, not after the run.
    pub fn prepare(path: &Path, peers_files: &[PathBuf], overwrite: bool) -> Result<Self> {
        check_plot_path(path, overwrite)?;
        let mut peers = Vec::new();
        let mut notes = Vec::new();
        for file in peers_files {
            let read = read_peers(file)?;
            if read.failed > 0 {
                notes.push(format!(
                    "{}: {} rows where the peer failed (an \"error\")",
                    file.display(),
                    read.failed
                ));
            }
            if read.not_round_tripped > 0 {
                notes.push(format!(
                    "{}: {} rows that did not round-trip",
                    file.display(),
                    read.not_round_tripped
                ));
            }
            peers.extend(read.rows);
        }
        Ok(BenchPlot {
            path: path.to_path_buf(),
            overwrite,
            peers,
            notes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Draws `rows` and the peers' rows of the same columns under a title that names
    /// `source` (`--sf 1`, `--file prices.bin`). Returns what was left out, a line each.
    pub fn draw(&self, rows: &[BenchRow], source: &str) -> Result<Vec<String>> {
        let drawn = bench_series(rows, &self.peers);
        plot_frontier(
            &drawn.series,
            &drawn.axes,
            &format!("colzip bench {source}: {}", drawn.columns),
            &self.path,
            self.overwrite,
        )?;
        Ok(self.notes.iter().cloned().chain(drawn.notes).collect())
    }
}

/// What [`bench_series`] makes of the rows.
#[derive(Debug)]
pub struct Drawn {
    /// colzip's GPU rows, its CPU rows, the peers' rows: in this order, each always
    /// there (perhaps empty), so a series keeps its marker whichever others are empty.
    pub series: Vec<PointSeries>,
    pub axes: SpeedAxes,
    /// The columns, for the title: their names (up to three) or their count.
    pub columns: String,
    /// Peers' rows left out, a line each.
    pub notes: Vec<String>,
}

/// The series of `rows` and of the `peers` rows on their columns (peers' rows of other
/// columns are left out, with a note). Points are labelled by codec and, when there are
/// several columns, column.
pub fn bench_series(rows: &[BenchRow], peers: &[PeerRow]) -> Drawn {
    let columns: BTreeSet<&str> = rows.iter().map(|r| r.row.column.as_str()).collect();
    let label = |codec: &str, column: &str| {
        if columns.len() > 1 {
            format!("{codec} {column}")
        } else {
            codec.to_string()
        }
    };
    let colzip = |backend: &str| -> Vec<Point> {
        rows.iter()
            .map(|r| &r.row)
            .filter(|r| r.backend == backend)
            .map(|r| Point {
                label: label(&r.codec, &r.column),
                ratio: r.ratio,
                compress_gbps: r.compress_gbps,
                decompress_gbps: r.decompress_gbps,
            })
            .collect()
    };
    let (same, other): (Vec<&PeerRow>, Vec<&PeerRow>) = peers
        .iter()
        .partition(|p| columns.contains(p.column.as_str()));
    let mut notes = Vec::new();
    if !other.is_empty() {
        let names: BTreeSet<&str> = other.iter().map(|p| p.column.as_str()).collect();
        notes.push(format!(
            "{} peer rows of columns this run did not measure ({})",
            other.len(),
            names.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let series = vec![
        PointSeries {
            name: GPU_SERIES.to_string(),
            points: colzip("gpu"),
        },
        PointSeries {
            name: CPU_SERIES.to_string(),
            points: colzip("cpu"),
        },
        PointSeries {
            name: PEER_SERIES.to_string(),
            points: same
                .iter()
                .map(|p| Point {
                    label: label(&p.peer, &p.column),
                    ratio: p.ratio,
                    compress_gbps: p.compress_gbps,
                    decompress_gbps: p.decompress_gbps,
                })
                .collect(),
        },
    ];
    let form = speed_form(
        !series[0].points.is_empty(),
        !series[2].points.is_empty(),
        !series[1].points.is_empty(),
    );
    let columns = match columns.len() {
        1..=3 => columns.into_iter().collect::<Vec<_>>().join(", "),
        n => format!("{n} columns"),
    };
    Drawn {
        series,
        axes: SpeedAxes {
            compress: format!("compression {form}"),
            decompress: format!("decompression {form}"),
        },
        columns,
        notes,
    }
}

/// What the speed axes call their GB/s, from the series that have points: one form by
/// its name, several each with whose it is.
fn speed_form(gpu: bool, peers: bool, cpu: bool) -> String {
    let forms: Vec<&str> = [
        (gpu, "kernel on the GPU"),
        (peers, "device-to-device calls for peers"),
        (cpu, "wall-clock on the CPU"),
    ]
    .into_iter()
    .filter_map(|(present, form)| present.then_some(form))
    .collect();
    match (gpu, peers, cpu) {
        (_, false, false) => "kernel GB/s (log scale)".to_string(),
        (false, true, false) => "GB/s of device-to-device calls (log scale)".to_string(),
        (false, false, true) => "wall-clock GB/s on all cores (log scale)".to_string(),
        _ => format!("GB/s (log scale): {}", forms.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use colzip::harness::columns::Row;

    fn bench_row(column: &str, codec: &str, backend: &str, figures: [f64; 3]) -> BenchRow {
        let [ratio, c, d] = figures;
        BenchRow {
            row: Row {
                table: "lineitem".to_string(),
                column: column.to_string(),
                arrow_type: "Int32".to_string(),
                rows: 1000,
                raw_bytes: 4000,
                codec: codec.to_string(),
                backend: backend.to_string(),
                compressed_bytes: (4000.0 / ratio) as u64,
                ratio,
                compress_gbps: c,
                decompress_gbps: d,
            },
            compress_e2e_gbps: c,
            decompress_e2e_gbps: d,
            compress_vec_gbps: c,
            decompress_vec_gbps: d,
            gpus: usize::from(backend == "gpu"),
        }
    }

    #[test]
    fn cpu_rows_are_a_series_of_their_own_and_axes_name_the_form() {
        let rows = vec![
            bench_row("l_quantity", "intpack", "cpu", [3.0, 2.0, 4.0]),
            bench_row("l_quantity", "gmatch", "cpu", [1.5, 0.5, 1.0]),
        ];
        let drawn = bench_series(&rows, &[]);
        assert_eq!(drawn.series.len(), 3);
        assert!(drawn.series[0].points.is_empty());
        assert_eq!(drawn.series[1].name, CPU_SERIES);
        assert_eq!(drawn.series[1].points.len(), 2);
        // One column: the labels are the codecs, the title names the column.
        assert_eq!(drawn.series[1].points[0].label, "intpack");
        assert_eq!(drawn.columns, "l_quantity");
        assert_eq!(
            drawn.axes.compress,
            "compression wall-clock GB/s on all cores (log scale)"
        );

        let mut rows = rows;
        rows.push(bench_row("l_comment", "gmatch", "gpu", [2.0, 60.0, 250.0]));
        let drawn = bench_series(&rows, &[]);
        assert_eq!(drawn.series[0].points[0].label, "gmatch l_comment");
        assert!(
            drawn
                .axes
                .decompress
                .contains("kernel on the GPU, wall-clock on the CPU")
        );
    }

    #[test]
    fn peers_of_other_columns_are_left_out_with_a_note() {
        let rows = vec![bench_row(
            "l_quantity",
            "intpack",
            "gpu",
            [3.0, 90.0, 200.0],
        )];
        let peer = |column: &str| PeerRow {
            peer: "nvcomp-cascaded".to_string(),
            column: column.to_string(),
            ratio: 2.5,
            compress_gbps: 100.0,
            decompress_gbps: 150.0,
        };
        let drawn = bench_series(&rows, &[peer("l_quantity"), peer("l_comment")]);
        assert_eq!(drawn.series[2].points.len(), 1);
        assert_eq!(drawn.series[2].points[0].label, "nvcomp-cascaded");
        assert_eq!(
            drawn.notes,
            vec!["1 peer rows of columns this run did not measure (l_comment)".to_string()]
        );
        assert_eq!(
            drawn.axes.compress,
            "compression GB/s (log scale): kernel on the GPU, device-to-device calls for peers"
        );
    }

    #[test]
    fn rows_and_a_peers_file_are_drawn_into_the_svg() {
        let dir = tempfile::tempdir().unwrap();
        let peers = dir.path().join("peers.json");
        std::fs::write(
            &peers,
            r#"[{"column": "l_quantity", "file": "l_quantity.i32", "peer": "nvcomp-lz4",
                 "raw_bytes": 4000, "compressed_bytes": 2000, "ratio": 2.0,
                 "compress_gbps": 70.0, "decompress_gbps": 280.0, "roundtrip": true},
                {"column": "l_comment", "file": "l_comment.txt", "peer": "streamlz-l5",
                 "error": "SLZ_ERROR_UNSUPPORTED"}]"#,
        )
        .unwrap();
        let rows = vec![
            bench_row("l_quantity", "intpack", "gpu", [3.0, 90.0, 200.0]),
            bench_row("l_quantity", "intpack", "cpu", [3.0, 2.0, 4.0]),
            bench_row(
                "l_quantity",
                "snap-stream:raw",
                "gpu",
                [1.8, f64::NAN, 120.0],
            ),
        ];
        let path = dir.path().join("bench.svg");
        let plot = BenchPlot::prepare(&path, std::slice::from_ref(&peers), false).unwrap();
        let notes = plot.draw(&rows, "--sf 0.01").unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("1 rows where the peer failed"),
            "{notes:?}"
        );
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("colzip bench --sf 0.01: l_quantity"));
        for legend in [GPU_SERIES, CPU_SERIES, PEER_SERIES] {
            assert_eq!(svg.matches(legend).count(), 1, "{legend}");
        }
        // Every point labelled: intpack on the GPU and the CPU in both panels, snap's
        // streams decoded only, the peer in both.
        let texts = crate::plot::svg_texts(&svg);
        let count = |text: &str| texts.iter().filter(|t| **t == text).count();
        assert_eq!(count("intpack"), 4, "{texts:?}");
        assert_eq!(count("snap-stream:raw"), 1, "{texts:?}");
        assert_eq!(count("nvcomp-lz4"), 2, "{texts:?}");
        // Markers: GPU discs (3 points and the legend's), CPU squares, peer triangles.
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        assert_eq!(svg.matches("<polygon").count(), 3, "{svg}");
        // Drawn once; a second time only with overwrite.
        assert!(BenchPlot::prepare(&path, &[], false).is_err());
        let again = BenchPlot::prepare(&path, &[], true).unwrap();
        again.draw(&rows, "--sf 0.01").unwrap();
    }
}
