//! The wave-maker validation of issue 14 on configs/wave_flume_2d.toml: a piston paddle makes
//! regular waves (H = 0.05 m, T = 1.2 s) in water 0.4 m deep (kd = 1.30, L = 1.94 m), a
//! damping zone from x = 6 m to the far wall at x = 9 m absorbs them, and water-height gauges
//! at x = 1.5, 3.0, 3.4 and 4.5 m read them every 0.01 s (at the first step end at or after
//! each, as the runtime writes gauges.csv) for 20 s. Each test makes its own run(s):
//!
//! - the mean zero-up-crossing height and period at x = 1.5, 3.0 and 4.5 m, over the window
//!   between the arrival of the full waves and that of the first waves reflected from the far
//!   end (group velocity of linear theory), are H within 5 % and T within 1 % (issue 14);
//! - the reflection coefficient of the damping zone, from the gauges at x = 3.0 and 3.4 m
//!   (Goda & Suzuki 1976) once the reflected waves are back, is below 0.10 (issue 14);
//! - Madsen's (1971) second-order paddle signal (`obstacle.0.motion.order=2`) halves at least
//!   the free second harmonic that first-order generation makes: the second harmonic measured
//!   at 2f less the bound one of Stokes' second-order theory (Dean & Dalrymple 1991),
//!   averaged over the three gauges (issue 14), for waves of T = 2 s, H = 0.06 m (kd = 0.68),
//!   where that free harmonic is large enough to measure;
//! - a JONSWAP sea from the same paddle matches the target elevation of linear theory at
//!   x = 1.5 and 3.0 m: significant height within 5 %, correlation above 0.9.
//!
//! Too slow for the CPU CI (36 000 fluid particles, about 100 000 steps): ignored, run on a
//! GPU by scripts/wave_flume.sh (`SURGE_TEST_BACKEND=cuda`). `SURGE_FLUME_DP` sets dp (the
//! file's is 0.01 m) for a finer run; `SURGE_FLUME_END` sets the end time (20 s) for a look
//! at the plumbing only, as the checks need the whole record; `SURGE_FLUME_SET` takes other
//! `--set`-style overrides separated by `;` (studies of settings).
//!
//! References: Madsen, O. S. (1971), On the generation of long waves, J. Geophys. Res. 76(36),
//! 8672-8683; Goda, Y. & Suzuki, Y. (1976), Estimation of incident and reflected waves in
//! random wave experiments, Proc. 15th ICCE, 828-845; Dean, R. G. & Dalrymple, R. A. (1991),
//! Water Wave Mechanics for Engineers and Scientists, World Scientific (linear theory, the
//! group velocity and Stokes' bound second harmonic).

mod common;
use common::*;
use std::f64::consts::PI;
use std::time::Instant;
use surge_core::case::Gauge;
use surge_core::gauge::columns;
use surge_core::motion::{Law, Signal};
use surge_core::waves::{
    harmonic, madsen_second_amplitude, piston_ratio, reflection_two_gauge, wave_number, zero_upcrossing, RegularWave,
};
use surge_core::Case;

const CASE: &str = "wave_flume_2d.toml";
/// Gauge sampling interval (s): T/120, so a sampled crest is low by at most
/// `a (1 - cos(π Δt / T))`, 0.03 % of the height.
const SAMPLE: f64 = 0.01;
/// The far end of the flume (m): the wall closing the damping zone, where the fluid ends.
const X_FAR: f64 = 9.0;
/// The gauges that read the waves along the flume.
const ALONG: [&str; 3] = ["eta_x1.5", "eta_x3.0", "eta_x4.5"];
/// The pair for the reflection, 0.4 m apart (0.21 L: within Goda & Suzuki's 0.05 L to 0.45 L).
const PAIR: [&str; 2] = ["eta_x3.0", "eta_x3.4"];

/// The gauge records of one run: sample times and each gauge column.
struct Records {
    case: Case,
    t: Vec<f64>,
    names: Vec<String>,
    cols: Vec<Vec<f64>>,
}

impl Records {
    /// The column `name` over the whole run.
    fn column(&self, name: &str) -> &[f64] {
        let k = self.names.iter().position(|c| c == name).unwrap_or_else(|| panic!("no gauge column {name}"));
        &self.cols[k]
    }

    /// The samples of column `name` at times in `[t0, t1]`: (times, values).
    fn window(&self, name: &str, t0: f64, t1: f64) -> (Vec<f64>, Vec<f64>) {
        let col = self.column(name);
        self.t.iter().zip(col).filter(|(&t, _)| t >= t0 && t <= t1).map(|(&t, &v)| (t, v)).unzip()
    }

    /// Time of the last sample.
    fn end(&self) -> f64 {
        *self.t.last().expect("at least the sample at t = 0")
    }

    /// The x of the water-height gauge `name`.
    fn x(&self, name: &str) -> f64 {
        match self.case.gauges.iter().find(|g| g.name() == name) {
            Some(Gauge::WaterHeight { at, .. }) => at[0],
            other => panic!("{name} is not a water-height gauge of the case: {other:?}"),
        }
    }

    /// The paddle's regular wave, as the case built it.
    fn wave(&self) -> RegularWave {
        match self.case.motions.first().and_then(|m| m.laws.first()) {
            Some(Law::Translate { s: Signal::Regular(w), .. } | Law::Flap { s: Signal::Regular(w), .. }) => {
                (**w).clone()
            }
            other => panic!("the flume's first moving solid is not a regular-wave paddle: {other:?}"),
        }
    }
}

/// Run the flume (with `--set`-style overrides, then `SURGE_FLUME_DP` and `SURGE_FLUME_END`)
/// on the test backend, sampling every gauge at the first step end at or after each multiple
/// of [`SAMPLE`] (steps are never shortened, as in `surge run`), to the first step end at or
/// after the end time. Prints what it ran and each column's mean, lowest and highest value.
fn run_flume(overrides: &[&str]) -> Records {
    run_flume_text(None, overrides)
}

/// [`run_flume`] on the flume's file, or on `text` (the file edited) when given.
fn run_flume_text(text: Option<&str>, overrides: &[&str]) -> Records {
    let mut sets: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    for (var, key) in [("SURGE_FLUME_DP", "dp"), ("SURGE_FLUME_END", "time.end")] {
        if let Ok(v) = std::env::var(var) {
            sets.push(format!("{key}={v}"));
        }
    }
    // Any other `--set`-style overrides, separated by `;` (studies of settings).
    if let Ok(v) = std::env::var("SURGE_FLUME_SET") {
        sets.extend(v.split(';').filter(|s| !s.trim().is_empty()).map(|s| s.trim().to_string()));
    }
    let case = match text {
        Some(text) => Case::from_str(text, &sets).unwrap_or_else(|e| panic!("{e}")),
        None => case(CASE, &sets.iter().map(String::as_str).collect::<Vec<_>>()),
    };
    let names = columns(&case);
    let mut sim = sim(&case, 0);
    let clock = Instant::now();
    let (mut t, mut cols) = (Vec::new(), vec![Vec::new(); names.len()]);
    let mut next = 0u64;
    loop {
        let now = sim.time();
        if now >= next as f64 * SAMPLE - 1e-9 * SAMPLE {
            let g = sim.gauges().unwrap_or_else(|e| panic!("{e}"));
            t.push(now);
            for (c, v) in cols.iter_mut().zip(g) {
                c.push(v);
            }
            while now >= next as f64 * SAMPLE - 1e-9 * SAMPLE {
                next += 1;
            }
        }
        if now >= case.end_time {
            break;
        }
        sim.step(f64::INFINITY).unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "flume ({}): dp = {} m, {} particles on {}, {} steps to t = {:.3} s in {:.1} s wall, {} samples",
        if sets.is_empty() { "as in the file".to_string() } else { sets.join(" ") }
            + if text.is_some() { " (edited)" } else { "" },
        case.dp,
        sim.particles(),
        sim.backend_name(),
        sim.steps(),
        sim.time(),
        clock.elapsed().as_secs_f64(),
        t.len()
    );
    for (name, c) in names.iter().zip(&cols) {
        let mean = c.iter().sum::<f64>() / c.len() as f64;
        let (lo, hi) = c.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
        println!("  {name:>10}: mean {mean:.5}, min {lo:.5}, max {hi:.5}");
    }
    Records { case, t, names, cols }
}

/// Group velocity (m/s) of linear waves of angular frequency `omega` in depth `depth`:
/// `c_g = n ω / k`, `n = (1 + 2kd / sinh 2kd) / 2` (Dean & Dalrymple 1991).
fn group_velocity(omega: f64, depth: f64, g: f64) -> f64 {
    let k = wave_number(omega, depth, g);
    let kd2 = 2.0 * k * depth;
    0.5 * (1.0 + kd2 / kd2.sinh()) * omega / k
}

/// Amplitude (m) of Stokes' bound second harmonic of a wave of height `height`:
/// `(k H² / 16) cosh kd (2 + cosh 2kd) / sinh³ kd` (Dean & Dalrymple 1991), in phase with
/// `cos 2θ` when the first harmonic is `(H/2) cos θ`.
fn bound_second(k: f64, height: f64, depth: f64) -> f64 {
    let kd = k * depth;
    k * height * height / 16.0 * kd.cosh() * (2.0 + (2.0 * kd).cosh()) / kd.sinh().powi(3)
}

/// An angle in [-π, π).
fn wrap(a: f64) -> f64 {
    (a + PI).rem_euclid(2.0 * PI) - PI
}

/// The whole periods of `period` that fit in `[from, to]`, counted back from `to`: the window
/// `(to - n period, to)` and n. A harmonic fit over whole periods of f (and so of 2f) keeps
/// the other harmonics of f out of it.
fn whole_periods(from: f64, to: f64, period: f64) -> (f64, f64, usize) {
    let n = ((to - from) / period + 1e-9).floor().max(0.0) as usize;
    (to - n as f64 * period, to, n)
}

/// The run's records at x = 1.5, 3.0 and 4.5 m, each over the window from the arrival of the
/// full waves, `t_ramp + x / c_g` (the front of the wave train travels at the group velocity;
/// the ramp ends t_ramp after the start), to that of the first waves reflected at the far
/// end, `(x_far + (x_far - x)) / c_g` (the train's leading edge left the paddle at t = 0):
///
/// - the mean zero-up-crossing height within 5 % of H = 0.05 m and the mean period within
///   1 % of T = 1.2 s (issue 14's tolerances), over at least 3 whole waves (the shortest
///   window, at x = 4.5 m, is 6.4 s to 12.0 s: 4.7 periods).
///
/// The window is free of reflections from the far wall, not of those from the damping zone
/// itself, which begin to come back sooner (from x = 6 m); their share is what
/// [`the_damping_zone_reflects_little`] bounds.
#[test]
#[ignore = "a GPU run of about a minute; scripts/wave_flume.sh runs it (SURGE_TEST_BACKEND=cuda)"]
fn regular_waves_have_the_height_and_period_asked() {
    let failures = heights_and_periods(&run_flume(&[]));
    assert!(failures.is_empty(), "{}", failures.join("; "));
}

/// The checks of [`regular_waves_have_the_height_and_period_asked`] on a run's records,
/// printed: what failed.
fn heights_and_periods(r: &Records) -> Vec<String> {
    let w = r.wave();
    let s = w.spec();
    let cg = group_velocity(w.omega(), s.depth, s.g);
    println!(
        "asked: H = {} m, T = {} s, d = {} m, ramp {} s; linear theory: kd = {:.3}, L = {:.3} m, c_g = {:.4} m/s",
        s.height,
        s.period,
        s.depth,
        s.ramp_time,
        w.k() * s.depth,
        w.wavelength(),
        cg
    );
    let mut failures = Vec::new();
    for name in ALONG {
        let x = r.x(name);
        let (t0, t1) = (s.ramp_time + x / cg, ((2.0 * X_FAR - x) / cg).min(r.end()));
        let (t, eta) = r.window(name, t0, t1);
        let waves = zero_upcrossing(&t, &eta);
        let n = waves.len() as f64;
        let h = waves.iter().map(|w| w.height).sum::<f64>() / n;
        let p = waves.iter().map(|w| w.period).sum::<f64>() / n;
        let (eh, ep) = (h / s.height - 1.0, p / s.period - 1.0);
        println!(
            "{name} (x = {x} m): window {t0:.2} s to {t1:.2} s, {} waves: mean H = {h:.5} m ({:+.2} %), \
             mean T = {p:.4} s ({:+.2} %)",
            waves.len(),
            100.0 * eh,
            100.0 * ep
        );
        for wv in &waves {
            println!("    up-crossing at {:.3} s: H = {:.5} m, T = {:.4} s", wv.start, wv.height, wv.period);
        }
        if waves.len() < 3 {
            failures.push(format!("{name}: {} waves in {t0:.2} s to {t1:.2} s, at least 3 needed", waves.len()));
            continue;
        }
        if eh.abs() > 0.05 {
            failures.push(format!("{name}: H = {h:.5} m, {:+.2} % from {} m (5 % allowed)", 100.0 * eh, s.height));
        }
        if ep.abs() > 0.01 {
            failures.push(format!("{name}: T = {p:.4} s, {:+.2} % from {} s (1 % allowed)", 100.0 * ep, s.period));
        }
    }
    failures
}

/// The reflection coefficient at f = 1/T from the gauges at x = 3.0 and 3.4 m (Goda &
/// Suzuki 1976: least-squares harmonics at f, separated with the linear wave number), over
/// the whole periods from when the full waves reflected at the far wall are back at
/// x = 3.0 m, `t_ramp + (x_far + (x_far - x)) / c_g` = 15.8 s (before that the reflection
/// is still growing in, and Kr would come out low), to the end of the run (3 periods, 16.4 s
/// to 20 s): below 0.10 (issue 14). The reflection that the paddle sends back again (it
/// absorbs nothing) is back at x = 3.0 m from 18.7 s on, at the order of Kr² of the
/// incident wave, travelling with it.
#[test]
#[ignore = "a GPU run of about a minute; scripts/wave_flume.sh runs it (SURGE_TEST_BACKEND=cuda)"]
fn the_damping_zone_reflects_little() {
    let kr = damping_reflection(&run_flume(&[]));
    assert!(kr < 0.10, "reflection coefficient {kr:.4}, 0.10 allowed");
}

/// The reflection coefficient of [`the_damping_zone_reflects_little`] from a run's records,
/// printed with the incident and reflected amplitudes.
fn damping_reflection(r: &Records) -> f64 {
    let w = r.wave();
    let s = w.spec();
    let cg = group_velocity(w.omega(), s.depth, s.g);
    let (x1, x2) = (r.x(PAIR[0]), r.x(PAIR[1]));
    let from = s.ramp_time + (2.0 * X_FAR - x1) / cg;
    let (t0, t1, n) = whole_periods(from, r.end(), s.period);
    assert!(n >= 3, "{n} whole periods from {from:.2} s to the end ({:.2} s): at least 3 needed", r.end());
    let (t, e1) = r.window(PAIR[0], t0, t1);
    let (_, e2) = r.window(PAIR[1], t0, t1);
    let dx = x2 - x1;
    let refl = reflection_two_gauge(&t, &e1, &e2, dx, 1.0 / s.period, s.depth, s.g).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{} and {} (dx = {dx:.2} m = {:.3} L, k dx = {:.3} rad), window {t0:.2} s to {t1:.2} s ({n} periods): \
         incident {:.5} m, reflected {:.5} m, Kr = {:.4}",
        PAIR[0],
        PAIR[1],
        dx / w.wavelength(),
        w.k() * dx,
        refl.incident,
        refl.reflected,
        refl.coefficient
    );
    refl.coefficient
}

/// The free second harmonic at the gauges x = 1.5, 3.0 and 4.5 m, from `label`'s run: at each
/// gauge the least-squares harmonics at f and 2f (whole periods, from when the free second
/// harmonic, travelling at the group velocity of 2f, 0.47 m/s, has arrived at full strength,
/// `t_ramp + x / c_g(2f)`, to the end of the run), less Stokes' bound harmonic of the measured
/// first harmonic (height twice its amplitude A1, phase twice its phase φ1): the magnitude
/// of the complex difference `A2 e^(iφ2) - a2(2 A1) e^(2iφ1)`.
fn free_second_harmonics(r: &Records, label: &str) -> Vec<f64> {
    let w = r.wave();
    let s = w.spec();
    let f = 1.0 / s.period;
    let cg2 = group_velocity(2.0 * w.omega(), s.depth, s.g);
    let mut free = Vec::new();
    for name in ALONG {
        let x = r.x(name);
        let (t0, t1, n) = whole_periods(s.ramp_time + x / cg2, r.end(), s.period);
        assert!(n >= 3, "{label}, {name}: {n} whole periods from {t0:.2} s to the end, at least 3 needed");
        let (t, eta) = r.window(name, t0, t1);
        let (a1, p1) = harmonic(&t, &eta, f).unwrap_or_else(|e| panic!("{e}"));
        let (a2, p2) = harmonic(&t, &eta, 2.0 * f).unwrap_or_else(|e| panic!("{e}"));
        let bound = bound_second(w.k(), 2.0 * a1, s.depth);
        let (re, im) = (a2 * p2.cos() - bound * (2.0 * p1).cos(), a2 * p2.sin() - bound * (2.0 * p1).sin());
        let fr = re.hypot(im);
        println!(
            "{label}, {name}: window {t0:.2} s to {t1:.2} s ({n} periods): first harmonic {:.5} m at {p1:+.3} rad; \
             second {:.3} mm at {p2:+.3} rad; bound {:.3} mm at {:+.3} rad; free {:.3} mm",
            a1,
            1e3 * a2,
            1e3 * bound,
            wrap(2.0 * p1),
            1e3 * fr
        );
        free.push(fr);
    }
    free
}

/// With Madsen's (1971) second-order paddle signal the free second harmonic, averaged over
/// the gauges x = 1.5, 3.0 and 4.5 m, is at most half that of first-order generation
/// (issue 14); the bound harmonic is Stokes' (Dean & Dalrymple 1991), see
/// [`free_second_harmonics`]. Two runs: the file's (order 1) and `obstacle.0.motion.order=2`
/// (the `--set` path reaches into the inline `motion` table: an inline table is a table of
/// the parsed TOML like any other).
///
/// Both runs make longer, steeper waves than the file's (`period = 2.0`, `height = 0.06`:
/// kd = 0.68), where first-order generation makes a free second harmonic worth measuring. At
/// the file's kd = 1.30 Madsen's paddle correction (A2 = -0.078 mm of displacement) makes a
/// free wave of only 0.16 mm against a bound harmonic of 1.8 mm, below what dp = 0.01 m
/// resolves: an H100 run of that case read 0.40 mm "free" with order 1 and 0.48 mm with
/// order 2, the estimate's own error. The reflected first harmonic in the windows shifts the
/// bound harmonic estimated from the measured first harmonic by up to about `2 Kr a2` in both
/// runs alike; Kr is printed too.
#[test]
#[ignore = "a GPU run of about a minute; scripts/wave_flume.sh runs it (SURGE_TEST_BACKEND=cuda)"]
fn second_order_generation_removes_the_free_second_harmonic() {
    const LONG: [&str; 2] = ["obstacle.0.motion.period=2.0", "obstacle.0.motion.height=0.06"];
    let first = run_flume(&LONG);
    let second = run_flume(&[LONG[0], LONG[1], "obstacle.0.motion.order=2"]);
    let (w1, w2) = (first.wave(), second.wave());
    assert_eq!((w1.spec().order, w2.spec().order), (1, 2), "the runs' paddle orders");
    let s = w1.spec();
    let kd = w1.k() * s.depth;
    let k2d = wave_number(2.0 * w1.omega(), s.depth, s.g) * s.depth;
    let madsen = madsen_second_amplitude(s.height, kd, s.depth);
    println!(
        "theory: bound second harmonic {:.3} mm; Madsen's A2 = {:.4} mm (order 2 paddle: {:.4} mm), free wave of \
         first-order generation |A2| (H/S)(k2d = {k2d:.2}) = {:.3} mm",
        1e3 * bound_second(w1.k(), s.height, s.depth),
        1e3 * madsen,
        1e3 * w2.second_amplitude(),
        1e3 * madsen.abs() * piston_ratio(k2d)
    );
    let kr = damping_reflection(&first);
    println!(
        "the reflected first harmonic (Kr = {kr:.4}) shifts the bound harmonic estimated at a gauge by up to about \
         2 Kr a2 = {:.3} mm",
        2e3 * kr * bound_second(w1.k(), s.height, s.depth)
    );
    let f1 = free_second_harmonics(&first, "order 1");
    let f2 = free_second_harmonics(&second, "order 2");
    let (m1, m2) = (f1.iter().sum::<f64>() / f1.len() as f64, f2.iter().sum::<f64>() / f2.len() as f64);
    println!(
        "mean free second harmonic: order 1 {:.3} mm, order 2 {:.3} mm (ratio {:.2})",
        1e3 * m1,
        1e3 * m2,
        m2 / m1
    );
    assert!(m2 <= 0.5 * m1, "free second harmonic {:.3} mm with order 2, {:.3} mm with order 1", 1e3 * m2, 1e3 * m1);
}

/// An irregular sea: the file's paddle driven by a JONSWAP spectrum (Hs = 0.04 m, Tp = 1.2 s,
/// gamma 3.3, 128 components from 0.5 to 3 fp, seed 1) instead of regular waves. At x = 1.5
/// and 3.0 m, over the window from the end of the ramp plus the travel time of the slowest
/// component (3 fp) to the end, the measured elevation is compared with the target of linear
/// theory at that point, `Σ a_i cos(ω_i t - k_i x + φ_i)` (`IrregularWave::elevation`):
/// the significant height 4 sqrt(m0) within 5 % of the target's over the same samples (the
/// tolerance of the regular heights, issue 14), and the two records correlated above 0.9
/// (the sea is the one asked for, wave by wave, not only in its statistics).
#[test]
#[ignore = "a GPU run of about a minute; scripts/wave_flume.sh runs it (SURGE_TEST_BACKEND=cuda)"]
fn an_irregular_sea_follows_its_spectrum_wave_by_wave() {
    let text = std::fs::read_to_string(configs_dir().join(CASE)).unwrap();
    let regular = "height = 0.05, period = 1.2, order = 1, ramp = 2.4";
    assert!(text.contains(regular), "the flume's paddle line");
    let text = text.replace(
        regular,
        "spectrum = { kind = \"jonswap\", hs = 0.04, tp = 1.2, gamma = 3.3, components = 128, seed = 1 }, ramp = 2.4",
    );
    let r = run_flume_text(Some(&text), &[]);
    let wave = match r.case.motions.first().and_then(|m| m.laws.first()) {
        Some(Law::Translate { s: Signal::Irregular(w), .. }) => (**w).clone(),
        other => panic!("the paddle is not driven by a spectrum: {other:?}"),
    };
    let s = wave.spec();
    // The slowest component: the top of the band (f_max fp); the target holds every component
    // at full amplitude, so the window starts once that one has arrived.
    let slow = group_velocity(2.0 * PI * s.f_max / s.tp, s.depth, s.g);
    let mut failed = Vec::new();
    for name in ["eta_x1.5", "eta_x3.0"] {
        let x = r.x(name);
        let (t, h) = r.window(name, s.ramp_time + x / slow, r.end());
        let mean = h.iter().sum::<f64>() / h.len() as f64;
        let m: Vec<f64> = h.iter().map(|v| v - mean).collect();
        let target: Vec<f64> = t.iter().map(|&t| wave.elevation(x, t)).collect();
        let tm = target.iter().sum::<f64>() / target.len() as f64;
        let target: Vec<f64> = target.iter().map(|v| v - tm).collect();
        let var = |a: &[f64]| a.iter().map(|v| v * v).sum::<f64>() / a.len() as f64;
        let (hs_m, hs_t) = (4.0 * var(&m).sqrt(), 4.0 * var(&target).sqrt());
        let corr =
            m.iter().zip(&target).map(|(a, b)| a * b).sum::<f64>() / (m.len() as f64 * (var(&m) * var(&target)).sqrt());
        let err = hs_m / hs_t - 1.0;
        println!(
            "{name} (x = {x} m): window {:.2} s to {:.2} s: Hs {hs_m:.5} m measured, {hs_t:.5} m target ({:+.2} %), correlation {corr:.3}",
            t[0],
            t[t.len() - 1],
            100.0 * err
        );
        if err.abs() > 0.05 || corr < 0.9 {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "the irregular sea is off at {failed:?}");
}
