//! `surge plot`: every gauge of a run's `gauges.csv` against time, one PNG per gauge, with
//! optional reference series (an experiment, another code's run) on the same chart and an
//! optional centred moving average.
//!
//! Charts: one per gauge (`P1.png`); the columns of one gauge with several components,
//! named `NAME.component` (a force gauge's `F1.fx`, `F1.fy`, `F1.fz`), share one chart
//! (`F1.png`). Each chart has its own value axis, so a pressure and a height never squeeze
//! each other. The time axis is the run's: a reference that runs longer is cut to it, and a
//! reference column is drawn on the chart of the gauge column of the same name.

use plotters::prelude::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// DejaVu Sans (Bitstream Vera licence, `benches/fonts/LICENSE-DejaVu.txt`), built into the
/// binary so that plotting needs no system font.
const FONT: &[u8] = include_bytes!("../benches/fonts/DejaVuSans.ttf");

/// Pixels of one chart.
const SIZE: (u32, u32) = (1000, 600);

/// Run series colours (one per component of a chart), and the reference colour of each.
const RUN_COLOURS: [RGBColor; 4] =
    [RGBColor(31, 119, 180), RGBColor(44, 160, 44), RGBColor(148, 103, 189), RGBColor(23, 190, 207)];
const REFERENCE_COLOURS: [RGBColor; 4] =
    [RGBColor(214, 39, 40), RGBColor(255, 127, 14), RGBColor(227, 119, 194), RGBColor(140, 86, 75)];

/// A reference of at most this many points also gets a marker per point (digitised data);
/// denser ones (instrument records) are drawn as a line only.
const MARKERS_UP_TO: usize = 300;

/// What went wrong, by whose fault: the input files and options (exit code 2), or writing the
/// plots (exit code 1). The message is one sentence naming the file.
#[derive(Debug)]
pub enum PlotError {
    Input(String),
    Output(String),
}

/// A table of series against time: a `gauges.csv`, or a reference in the same form.
#[derive(Debug)]
pub struct Table {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its `# label: ...` line, if any: the reference's name in the legend.
    pub label: Option<String>,
    /// Column names after `time`.
    pub names: Vec<String>,
    /// Times, non-decreasing.
    pub time: Vec<f64>,
    /// `columns[k][i]`: column `names[k]` at `time[i]`; NaN where the field was empty.
    pub columns: Vec<Vec<f64>>,
}

/// Reads a CSV whose first column is `time` (also `Time`, `time [s]`, `Time (s)`): a header
/// line of names, then rows of numbers separated by commas. Lines starting with `#` are
/// comments; `# label: TEXT` names the table in legends. An empty field is a missing value.
pub fn read_table(path: &Path) -> Result<Table, PlotError> {
    const EXPECTED: &str = "expected a CSV file with a header `time,<names>` and rows of numbers";
    let text = std::fs::read_to_string(path)
        .map_err(|e| PlotError::Input(format!("{}: cannot read it ({e}); {EXPECTED}", path.display())))?;
    let bad = |line: usize, what: String| PlotError::Input(format!("{} line {line}: {what}", path.display()));
    let mut label = None;
    let mut header: Option<Vec<String>> = None;
    let (mut time, mut columns) = (Vec::new(), Vec::<Vec<f64>>::new());
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(l) = comment.trim().strip_prefix("label:") {
                label.get_or_insert_with(|| l.trim().to_string());
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(|f| f.trim().trim_matches('"')).collect();
        let Some(names) = &header else {
            if !is_time(fields[0]) {
                return Err(PlotError::Input(format!(
                    "{}: the first column is `{}`, expected `time` ({EXPECTED})",
                    path.display(),
                    fields[0]
                )));
            }
            let names: Vec<String> = fields[1..].iter().map(|s| s.to_string()).collect();
            if names.is_empty() {
                return Err(bad(n, "only a `time` column: nothing to plot".into()));
            }
            let mut seen = HashSet::new();
            if let Some(dup) = names.iter().find(|s| !seen.insert(s.as_str())) {
                return Err(bad(n, format!("column `{dup}` appears twice")));
            }
            columns = vec![Vec::new(); names.len()];
            header = Some(names);
            continue;
        };
        if fields.len() != names.len() + 1 {
            return Err(bad(n, format!("{} values for {} columns", fields.len(), names.len() + 1)));
        }
        let number = |k: usize| -> Result<f64, PlotError> {
            let name = if k == 0 { "time" } else { &names[k - 1] };
            match fields[k] {
                "" if k > 0 => Ok(f64::NAN),
                f => f.parse::<f64>().map_err(|_| bad(n, format!("column `{name}`: `{f}` is not a number"))),
            }
        };
        let t = number(0)?;
        if !t.is_finite() {
            return Err(bad(n, format!("time `{}` is not a finite number", fields[0])));
        }
        if let Some(&last) = time.last() {
            if t < last {
                return Err(bad(n, format!("time {t} comes after {last}: rows must be in time order")));
            }
        }
        time.push(t);
        for (k, col) in columns.iter_mut().enumerate() {
            col.push(number(k + 1)?);
        }
    }
    let Some(names) = header else {
        return Err(PlotError::Input(format!("{}: no header line; {EXPECTED}", path.display())));
    };
    if time.is_empty() {
        return Err(PlotError::Input(format!("{}: a header but no rows of data", path.display())));
    }
    Ok(Table { path: path.to_owned(), label, names, time, columns })
}

/// `time`, optionally capitalised and followed by a unit: `Time (s)`, `time [s]`.
fn is_time(name: &str) -> bool {
    name.split([' ', '[', '(']).next().is_some_and(|w| w.eq_ignore_ascii_case("time"))
}

/// Centred moving average over `window` seconds: at each time t the time average over
/// t ± window/2 of the line through the finite samples (the integral of their piecewise
/// linear interpolant by the trapezoid rule, divided by the window's length; NaN where there
/// are none). `time` is sorted. Centred, so a peak keeps its time; at the ends the window is
/// cut to the finite samples' span (a window cut to one instant takes the line's value there;
/// one wholly outside it is NaN).
///
/// Time-weighted, not the mean of the samples inside: a run samples its gauges at the first
/// step past each interval, so its sample times jitter, and a mean of samples gains or loses
/// a whole sample as a window's end passes one. On a spiky signal (a WCSPH impact pressure
/// spikes for a sample or two) that moved SPHERIC Test 2's averaged P1 peak by 10 points
/// between two runs whose samples agreed within a few per cent (docs/PERFORMANCE.md).
pub fn moving_average(time: &[f64], values: &[f64], window: f64) -> Vec<f64> {
    let (t, v): (Vec<f64>, Vec<f64>) =
        time.iter().zip(values).filter(|(_, v)| v.is_finite()).map(|(&t, &v)| (t, v)).unzip();
    if t.is_empty() {
        return vec![f64::NAN; time.len()];
    }
    // area[k]: the integral of the line from t[0] to t[k].
    let mut area = vec![0.0; t.len()];
    for k in 1..t.len() {
        area[k] = area[k - 1] + 0.5 * (v[k] + v[k - 1]) * (t[k] - t[k - 1]);
    }
    // The line's value and its integral from t[0] at x, within [t[0], t[last]].
    let at = |x: f64| -> (f64, f64) {
        let k = t.partition_point(|&ti| ti <= x);
        if k == 0 {
            return (v[0], 0.0);
        }
        if k == t.len() {
            return (v[k - 1], area[k - 1]);
        }
        let (t0, t1) = (t[k - 1], t[k]);
        let y = if t1 > t0 { v[k - 1] + (v[k] - v[k - 1]) * (x - t0) / (t1 - t0) } else { v[k - 1] };
        (y, area[k - 1] + 0.5 * (v[k - 1] + y) * (x - t0))
    };
    let (first, last) = (t[0], t[t.len() - 1]);
    time.iter()
        .map(|&c| {
            let lo = (c - 0.5 * window).max(first);
            let hi = (c + 0.5 * window).min(last);
            if hi > lo {
                (at(hi).1 - at(lo).1) / (hi - lo)
            } else if hi == lo {
                at(lo).0
            } else {
                f64::NAN // the window holds no finite sample and lies outside them
            }
        })
        .collect()
}

/// The charts of a table: the names of the columns drawn together, by first appearance.
/// `F1.fx`, `F1.fy`, `F1.fz` share the chart `F1`; any other column has a chart of its own.
pub fn group_columns(names: &[String]) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let key = name.split_once('.').map_or(name.as_str(), |(g, _)| g);
        match groups.iter_mut().find(|(g, _)| g == key) {
            Some((_, cols)) => cols.push(k),
            None => groups.push((key.to_string(), vec![k])),
        }
    }
    groups
}

/// `--only P*,H1`: names, or prefixes ending in `*`.
fn selected(name: &str, patterns: &[String]) -> bool {
    let key = name.split_once('.').map_or(name, |(g, _)| g);
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name || p == key,
    })
}

/// A file name from a gauge name: letters, digits, `-`, `_` and `.` kept, others `_`.
fn file_stem(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with('.') {
        format!("gauge{s}")
    } else {
        s
    }
}

/// What `surge plot` was asked.
pub struct Options {
    /// A run's output directory, or a `gauges.csv`.
    pub run: PathBuf,
    /// Where the PNGs go [default: `plots/` beside the `gauges.csv`].
    pub out: Option<PathBuf>,
    /// Reference tables (an experiment's series, another code's) drawn on the same charts.
    pub reference: Vec<PathBuf>,
    /// Moving-average window (s) applied to the run and the reference alike.
    pub average: Option<f64>,
    /// Only the gauges matching these names or `prefix*` patterns.
    pub only: Vec<String>,
}

/// The largest value of one series within the run's time span, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    pub value: f64,
    pub time: f64,
}

/// What `surge plot` drew: a row per gauge column.
pub struct Report {
    /// The directory of the PNGs.
    pub out: PathBuf,
    /// The PNG files written.
    pub files: Vec<PathBuf>,
    /// Per gauge column: its name, its peak, and each reference's peak in the same time span
    /// (None where a reference has no such column).
    pub peaks: Vec<(String, Option<Peak>, Vec<Option<Peak>>)>,
    /// Each reference's label, and its columns that match no gauge.
    pub reference: Vec<(String, Vec<String>)>,
}

/// The largest finite value among `(t, v)` with t in `span`.
fn peak(time: &[f64], values: &[f64], span: (f64, f64)) -> Option<Peak> {
    time.iter().zip(values).filter(|(t, v)| v.is_finite() && **t >= span.0 && **t <= span.1).fold(
        None,
        |best: Option<Peak>, (&t, &v)| match best {
            Some(b) if b.value >= v => Some(b),
            _ => Some(Peak { value: v, time: t }),
        },
    )
}

/// One series on a chart.
struct Series {
    label: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
    reference: bool,
    /// A marker at each point: a sparse reference.
    markers: bool,
}

/// Reads the run's gauges and the reference, writes the PNGs. The `gauges.csv` of a run
/// still going can be plotted: it is written a whole row at a time.
pub fn plot(o: &Options) -> Result<Report, PlotError> {
    if let Some(w) = o.average {
        if !(w.is_finite() && w > 0.0) {
            return Err(PlotError::Input(format!("--average {w}: expected a positive number of seconds")));
        }
    }
    if !o.run.exists() {
        return Err(PlotError::Input(format!(
            "{}: no such file or directory; expected a run's output directory or its gauges.csv",
            o.run.display()
        )));
    }
    let csv = if o.run.is_dir() { o.run.join("gauges.csv") } else { o.run.clone() };
    let run = read_table(&csv)?;
    let reference = o.reference.iter().map(|r| read_table(r)).collect::<Result<Vec<_>, _>>()?;
    let run_dir = csv.parent().map(Path::to_path_buf).unwrap_or_default();
    let out = o.out.clone().unwrap_or_else(|| run_dir.join("plots"));
    let run_name = std::fs::canonicalize(&run_dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".into());

    let groups: Vec<(String, Vec<usize>)> = group_columns(&run.names)
        .into_iter()
        .filter(|(_, cols)| o.only.is_empty() || cols.iter().any(|&k| selected(&run.names[k], &o.only)))
        .collect();
    if groups.is_empty() {
        return Err(PlotError::Input(format!(
            "--only {}: no gauge of {} matches (its gauges: {})",
            o.only.join(","),
            csv.display(),
            run.names.join(", ")
        )));
    }
    let smooth = |t: &[f64], v: &[f64]| match o.average {
        Some(w) => moving_average(t, v, w),
        None => v.to_vec(),
    };
    let span = (run.time[0], *run.time.last().expect("read_table returns rows"));
    let ref_label: Vec<String> = reference
        .iter()
        .map(|r| {
            r.label.clone().unwrap_or_else(|| r.path.file_name().unwrap_or_default().to_string_lossy().into_owned())
        })
        .collect();
    let avg_note = o.average.map(|w| format!(", {} ms average", w * 1e3)).unwrap_or_default();

    std::fs::create_dir_all(&out)
        .map_err(|e| PlotError::Output(format!("{}: cannot create the plot directory ({e})", out.display())))?;
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| PlotError::Output("the built-in font cannot be read".into()))?;

    let mut files = Vec::new();
    let mut peaks = Vec::new();
    let mut stems = HashSet::new();
    for (group, cols) in &groups {
        let mut series = Vec::new();
        for (slot, &k) in cols.iter().enumerate() {
            let name = &run.names[k];
            let v = smooth(&run.time, &run.columns[k]);
            let run_peak = peak(&run.time, &v, span);
            let mut ref_peaks = Vec::new();
            let prefix = if cols.len() > 1 { format!("{name}: ") } else { String::new() };
            for (k, (r, label)) in reference.iter().zip(&ref_label).enumerate() {
                let Some(j) = r.names.iter().position(|n| n == name) else {
                    ref_peaks.push(None);
                    continue;
                };
                let rv = smooth(&r.time, &r.columns[j]);
                ref_peaks.push(peak(&r.time, &rv, span));
                series.push(Series {
                    label: format!("{prefix}{label}{avg_note}"),
                    // One colour a reference, and a component's colours apart.
                    colour: REFERENCE_COLOURS[(slot * reference.len() + k) % REFERENCE_COLOURS.len()],
                    points: finite_points(&r.time, &rv, span),
                    reference: true,
                    markers: r.time.len() <= MARKERS_UP_TO,
                });
            }
            series.push(Series {
                label: format!("{prefix}surge: {run_name}{avg_note}"),
                colour: RUN_COLOURS[slot % RUN_COLOURS.len()],
                points: finite_points(&run.time, &v, span),
                reference: false,
                markers: false,
            });
            peaks.push((name.clone(), run_peak, ref_peaks));
        }
        let mut stem = file_stem(group);
        while !stems.insert(stem.clone()) {
            stem.push('_');
        }
        let path = out.join(format!("{stem}.png"));
        draw(&path, group, span, &series)?;
        files.push(path);
    }
    let reference = reference
        .iter()
        .zip(ref_label)
        .map(|(r, label)| (label, r.names.iter().filter(|n| !run.names.contains(n)).cloned().collect()))
        .collect();
    Ok(Report { out, files, peaks, reference })
}

fn finite_points(time: &[f64], values: &[f64], span: (f64, f64)) -> Vec<(f64, f64)> {
    time.iter()
        .zip(values)
        .filter(|(t, v)| v.is_finite() && **t >= span.0 && **t <= span.1)
        .map(|(&t, &v)| (t, v))
        .collect()
}

/// Draws one chart into `path`, written under a temporary name and renamed, as surge writes
/// all its files: a crash never leaves half a PNG.
fn draw(path: &Path, title: &str, span: (f64, f64), series: &[Series]) -> Result<(), PlotError> {
    let tmp = path.with_extension("tmp.png");
    let fail = |e: String| PlotError::Output(format!("{}: cannot write the plot ({e})", path.display()));
    let (t0, t1) = if span.1 > span.0 { span } else { (span.0 - 0.5, span.1 + 0.5) };
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo > hi {
        (-1.0, 1.0)
    } else if hi - lo <= 1e-12 * lo.abs().max(1.0) {
        let pad = 0.1 * lo.abs().max(1e-3);
        (lo - pad, hi + pad)
    } else {
        let pad = 0.05 * (hi - lo);
        (lo - pad, hi + pad)
    };
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(&tmp, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 26))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(t0..t1, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("time [s]")
            .y_desc(title)
            .label_style(("sans-serif", 16))
            .axis_desc_style(("sans-serif", 18))
            .y_label_formatter(&|v| fmt_tick(*v, hi - lo))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        // References first, so the run is drawn over them.
        for s in series.iter().filter(|s| s.reference).chain(series.iter().filter(|s| !s.reference)) {
            let c = s.colour;
            let width = if s.reference { 1 } else { 2 };
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(width)))?
                .label(s.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(width)));
            if s.markers {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()?;
        root.present()?;
        Ok(())
    })();
    match result {
        Ok(()) => std::fs::rename(&tmp, path).map_err(|e| fail(e.to_string())),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(fail(e.to_string()))
        }
    }
}

/// A value-axis label: as many decimals as the axis span needs, and `0` rather than `-0.0`.
fn fmt_tick(v: f64, span: f64) -> String {
    let decimals = (1 - span.max(1e-300).log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.decimals$}");
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        "0".into()
    } else {
        s
    }
}

/// A number with about five significant digits, for the peak table.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.4e}")
    } else {
        let decimals = (4 - a.log10().floor() as i32).clamp(0, 7) as usize;
        format!("{v:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("surge-plot-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_comments_label_units_and_missing_values() {
        let p = write("ok.csv", "# from somewhere\n# label: MARIN 2005\nTime (s), P1 ,H1\n0,1,\n0.5,2,3\n\n1,-1e3,4\n");
        let t = read_table(&p).unwrap();
        assert_eq!(t.label.as_deref(), Some("MARIN 2005"));
        assert_eq!(t.names, ["P1", "H1"]);
        assert_eq!(t.time, [0.0, 0.5, 1.0]);
        assert_eq!(t.columns[0], [1.0, 2.0, -1000.0]);
        assert!(t.columns[1][0].is_nan());
        assert_eq!(t.columns[1][1..], [3.0, 4.0]);
    }

    #[test]
    fn bad_tables_name_the_line_and_what_is_expected() {
        let cases = [
            ("nt.csv", "t,P1\n0,1\n", "the first column is `t`, expected `time`"),
            ("short.csv", "time,P1,P2\n0,1\n", "line 2: 2 values for 3 columns"),
            ("nan.csv", "time,P1\n0,abc\n", "line 2: column `P1`: `abc` is not a number"),
            ("order.csv", "time,P1\n1,1\n0.5,2\n", "line 3: time 0.5 comes after 1"),
            ("empty.csv", "# nothing\n", "no header line"),
            ("norows.csv", "time,P1\n", "a header but no rows"),
            ("dup.csv", "time,P1,P1\n0,1,2\n", "column `P1` appears twice"),
        ];
        for (name, text, expected) in cases {
            match read_table(&write(name, text)) {
                Err(PlotError::Input(msg)) => {
                    assert!(msg.contains(name) && msg.contains(expected), "{name}: {msg}")
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn moving_average_is_centred_and_skips_missing_values() {
        let t = [0.0, 0.001, 0.002, 0.003, 0.004];
        let v = [0.0, 0.0, 5.0, 0.0, f64::NAN];
        let a = moving_average(&t, &v, 0.002);
        // Window t ± 1 ms over the line through the finite samples (a triangle of area 5e-3
        // from 1 to 3 ms), cut at the ends; the NaN is left out, and the window at 4 ms, cut
        // to the last finite sample's instant, takes its value.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
        assert_eq!(a[0], 0.0);
        assert!(close(a[1], 1.25), "{}", a[1]);
        assert!(close(a[2], 2.5), "{}", a[2]);
        assert!(close(a[3], 2.5), "{}", a[3]);
        assert_eq!(a[4], 0.0);
        // A window wholly past the last finite sample has none.
        let b = moving_average(&[0.0, 0.001, 0.002, 0.003], &[1.0, 1.0, f64::NAN, f64::NAN], 0.002);
        assert_eq!(b[..2], [1.0, 1.0]);
        assert!(b[2] == 1.0 && b[3].is_nan(), "{b:?}");
        // The peak stays where it was.
        let p = peak(&t, &moving_average(&t, &[0.0, 1.0, 4.0, 1.0, 0.0], 0.002), (0.0, 1.0)).unwrap();
        assert_eq!(p.time, 0.002);
    }

    #[test]
    fn moving_average_does_not_depend_on_where_the_samples_fall() {
        // A Gaussian pulse (sigma 3 ms, peak 1) sampled about every millisecond at jittered
        // times, as a run samples its gauges, averaged over 10 ms: the exact average of the
        // pulse is (erf((t - t0 + w/2) / (sigma sqrt 2)) - erf((t - t0 - w/2) / (sigma sqrt 2)))
        // sigma sqrt(pi / 2) / w. With samples at most h = 1.1 ms apart and max|p''| =
        // 1 / sigma^2, the line's integral errs by at most h^2 / 12 max|p''| a unit length
        // over whole intervals and h^2 / 8 max|p''| over the two cut at the window's ends:
        // (w / 12 + h / 4) h^2 / sigma^2 / w = 0.015 of the peak, whatever the jitter (the
        // error is 0.0024 here; the mean of the samples inside the window errs by 0.047).
        let (t0, sigma, w) = (0.05, 0.003, 0.01);
        let pulse = |t: f64| (-0.5 * ((t - t0) / sigma).powi(2)).exp();
        // erf by Abramowitz and Stegun 7.1.26 (error below 1.5e-7).
        let erf = |x: f64| {
            let s = x.signum();
            let x = x.abs();
            let k = 1.0 / (1.0 + 0.327_591_1 * x);
            let poly = k
                * (0.254_829_592
                    + k * (-0.284_496_736 + k * (1.421_413_741 + k * (-1.453_152_027 + k * 1.061_405_429))));
            s * (1.0 - poly * (-x * x).exp())
        };
        let exact = |t: f64| {
            let r = sigma * std::f64::consts::SQRT_2;
            (erf((t - t0 + 0.5 * w) / r) - erf((t - t0 - 0.5 * w) / r)) * sigma * (0.5 * std::f64::consts::PI).sqrt()
                / w
        };
        for shift in [0.0, 0.3e-3, 0.5e-3, 0.9e-3] {
            // Sample k at k ms + shift + a jitter of up to 0.1 ms (a fixed pseudo-random pattern).
            let t: Vec<f64> =
                (0..100).map(|k| k as f64 * 1e-3 + shift + 1e-4 * (((k * 7919) % 13) as f64 / 12.0)).collect();
            let v: Vec<f64> = t.iter().map(|&x| pulse(x)).collect();
            let a = moving_average(&t, &v, w);
            for (&ti, &ai) in t.iter().zip(&a) {
                if ti > 0.02 && ti < 0.08 {
                    assert!((ai - exact(ti)).abs() < 0.015, "shift {shift}: at {ti} {ai} against {}", exact(ti));
                }
            }
        }
    }

    #[test]
    fn force_components_share_a_chart() {
        let names: Vec<String> = ["P1", "F1.fx", "H1", "F1.fy", "F1.fz"].iter().map(|s| s.to_string()).collect();
        let g = group_columns(&names);
        assert_eq!(g, [("P1".into(), vec![0]), ("F1".into(), vec![1, 3, 4]), ("H1".into(), vec![2])]);
        assert!(selected("F1.fy", &["F1".into()]));
        assert!(selected("P12", &["P*".into()]));
        assert!(!selected("H1", &["P*".into(), "H2".into()]));
        assert_eq!(file_stem("a/b c"), "a_b_c");
    }

    #[test]
    fn values_print_with_five_digits() {
        assert_eq!(fmt_value(12345.678), "12346");
        assert_eq!(fmt_value(0.123456), "0.12346");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(2.5e-5), "2.5000e-5");
        assert_eq!(fmt_tick(-1e-17, 0.5), "0");
        assert_eq!(fmt_tick(0.25, 0.5), "0.25");
        assert_eq!(fmt_tick(12000.0, 9000.0), "12000");
    }
}
