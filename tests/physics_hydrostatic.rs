//! Water at rest in a tank (configs/hydrostatic_2d.toml, 1 m deep, dp = 0.02 m): after 2 s,
//! the pressure of the fluid below the top two particle layers, averaged in 0.1 m bins of
//! height, is within 2 % of rho0 g (H - y) (the bound), H being the free surface
//! measured by the water-height gauge. Measured: at most 1.6 %. Spurious velocity: below
//! 2 % of sqrt(g H) (measured about 0.5 %, 0.014 m/s).

mod common;
use common::*;

#[test]
fn hydrostatic_pressure_after_settling() {
    let case = case("hydrostatic_2d.toml", &[]);
    let mut sim = sim(&case, 0);
    sim.advance_to(2.0).unwrap();
    let s = sim.snapshot().unwrap();
    let height = sim.gauges().unwrap()[2];
    assert!((height - 1.0).abs() < case.dp, "free surface at {height} m, expected 1 m within dp");
    let g = 9.81;
    let mut bins = vec![(0.0f64, 0.0f64, 0usize); 10];
    for i in fluid(&s) {
        let y = s.pos[i][1];
        let depth = height - y;
        if depth < 2.0 * case.dp {
            continue;
        }
        let b = ((y / 0.1) as usize).min(9);
        bins[b].0 += s.p[i] as f64;
        bins[b].1 += case.rho0 * g * depth;
        bins[b].2 += 1;
    }
    for (k, (p, p_ref, n)) in bins.iter().enumerate() {
        assert!(*n > 0, "no fluid in height bin {k}");
        let err = p / p_ref - 1.0;
        println!("y in [{:.1}, {:.1}): pressure error {:.2} %", k as f64 * 0.1, (k + 1) as f64 * 0.1, 100.0 * err);
        assert!(
            err.abs() < 0.02,
            "height bin {k}: pressure {:.1} Pa against {:.1} Pa",
            p / *n as f64,
            p_ref / *n as f64
        );
    }
    let vmax = fluid(&s).map(|i| (s.vel[i][0] as f64).hypot(s.vel[i][1] as f64)).fold(0.0, f64::max);
    let scale = (g * 1.0f64).sqrt();
    println!("largest fluid speed {vmax:.4} m/s = {:.2} % of sqrt(g H)", 100.0 * vmax / scale);
    assert!(vmax < 0.02 * scale, "spurious velocity {vmax} m/s");
}

/// Pressure errors of the first layer of wall particles after 2 s (left wall, right wall:
/// 0.1 m bins of height at depths of 0.2 m and more; floor: averaged), against the weight of
/// the fluid above (`weight`: `g / L · sum m_f` over the fluid above, the pressure a wall at
/// rest must carry, compressibility included) or `rho0 g (H - y)`; and the largest fluid
/// speed over sqrt(g H).
fn wall_figures(case: &surge_core::Case, weight: bool) -> (Vec<f64>, f64, f64) {
    let mut sim = sim(case, 0);
    sim.advance_to(2.0).unwrap();
    let s = sim.snapshot().unwrap();
    let height = sim.gauges().unwrap()[2];
    assert!((height - 1.0).abs() < case.dp, "free surface at {height} m, expected 1 m within dp");
    let g = 9.81;
    let (width, dp) = (1.0, case.dp);
    let fluid_y: Vec<f64> = fluid(&s).map(|i| s.pos[i][1]).collect();
    // Weight above y: each fluid particle's mass spread over dp of height.
    let above = |y: f64| -> f64 {
        fluid_y.iter().map(|&yf| ((yf + 0.5 * dp - y) / dp).clamp(0.0, 1.0)).sum::<f64>() * case.mass * g / width
    };
    let reference = |y: f64| if weight { above(y.max(0.0)) } else { case.rho0 * g * (height - y) };
    let mut walls = vec![vec![(0.0f64, 0.0f64); 10]; 2];
    let mut floor = (0.0f64, 0.0f64);
    let half = 0.5 * dp;
    for i in (0..s.len()).filter(|&i| s.kind[i] != 0) {
        let [x, y, _] = s.pos[i];
        if (y + half).abs() < 1e-6 && x > 0.0 && x < 1.0 {
            floor.0 += s.p[i] as f64;
            floor.1 += reference(y);
        } else if height - y >= 0.2 && y > 0.0 && ((x + half).abs() < 1e-6 || (x - 1.0 - half).abs() < 1e-6) {
            let b = &mut walls[(x > 0.5) as usize][((y / 0.1) as usize).min(9)];
            b.0 += s.p[i] as f64;
            b.1 += reference(y);
        }
    }
    let mut errors: Vec<f64> = walls.iter().flatten().filter(|b| b.1 > 0.0).map(|(p, p_ref)| p / p_ref - 1.0).collect();
    assert_eq!(errors.len(), 16, "side-wall bins at 0.2 m depth or more");
    errors.push(floor.0 / floor.1 - 1.0);
    let vmax = fluid(&s).map(|i| (s.vel[i][0] as f64).hypot(s.vel[i][1] as f64)).fold(0.0, f64::max);
    (errors, vmax / (g * height).sqrt(), height)
}

#[test]
#[ignore]
fn diag() {
    let extra = std::env::var("DIAG").unwrap_or_default();
    for b in ["mdbc"] {
        let set = format!("physics.boundary={{kind=\"{b}\"}}");
        let mut o = vec![set.as_str()];
        if !extra.is_empty() {
            o.extend(extra.split(';'));
        }
        let case = case("hydrostatic_2d.toml", &o);
        for w in [false] {
            let (e, v, h) = wall_figures(&case, w);
            let e: Vec<String> = e.iter().map(|x| format!("{:.2}", 100.0 * x)).collect();
            println!("{b} {extra} weight={w} H={h:.4} speed {:.3} %: {}", 100.0 * v, e.join(" "));
        }
    }
}
