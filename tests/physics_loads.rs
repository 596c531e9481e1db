//! Loads on solids and the wire-gauge water height, on water at rest (2D, dp = 0.02 m,
//! the settings of configs/hydrostatic_2d.toml: 2 s of settling, then the gauges averaged
//! over 5 samples 0.1 s apart to leave out what remains of the start-up wave).

mod common;
use common::*;
use surge_core::gauge::columns;
use surge_core::Case;

const RHO: f64 = 1000.0;
const G: f64 = 9.81;

/// The physics of configs/hydrostatic_2d.toml around the given geometry and gauges.
fn still_water(geometry: &str) -> Case {
    let text = format!(
        r#"
        dp = 0.02
        h_over_dp = 1.5
        [physics]
        rho0 = 1000.0
        body_force = [0.0, -9.81]
        eos = {{ c0_coef = 10.0 }}
        viscosity = {{ kind = "artificial", alpha = 0.1 }}
        density_diffusion = {{ kind = "fourtakas", delta = 0.1 }}
        [time]
        end = 2.0
        {geometry}
        "#
    );
    Case::from_str(&text, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Settle 1.6 s, then average each gauge column over 5 samples from 1.6 s to 2.0 s.
fn settled_gauges(case: &Case) -> Vec<f64> {
    let mut sim = sim(case, 0);
    let mut mean = vec![0.0; columns(case).len()];
    for k in 0..5 {
        sim.advance_to(1.6 + 0.1 * k as f64).unwrap_or_else(|e| panic!("{e}"));
        for (m, g) in mean.iter_mut().zip(sim.gauges().unwrap()) {
            *m += g / 5.0;
        }
    }
    mean
}

/// The value of the gauge column `name`.
fn column(case: &Case, values: &[f64], name: &str) -> f64 {
    values[columns(case).iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"))]
}

/// A tank 1 m wide with water 1 m deep; its right side is a wall of its own (`right`, its
/// layers reaching under the floor so the corner is closed).
///
/// - Load on the right wall: the hydrostatic thrust `rho g H^2 / 2` = 4905 N per metre of
///   width, within 2 % (the issue's bound; H = 1 m, the depth filled). Measured: 0.2 %.
/// - The fluid's vertical force on both walls together is its weight `m g` (the fluid is
///   at rest, and every fluid–wall pair's force is exactly minus the fluid's), within 1 %
///   (what remains of the start-up wave). Measured: 0.14 %.
/// - The wire-gauge height at x = 0.5 m equals the depth within dp/2 (the fluid's volume
///   per column, `sum m / rho`, is the depth filled less its compression under its own
///   weight, about 0.5 % of 1 m (c0 = 10 sqrt(g H)), and the lattice sum of the kernel is 1
///   to a fraction of a percent). Measured: 6.8 mm below.
/// - A gauge line beside the tank, out of the kernel's reach of any fluid, reads 0 exactly.
#[test]
fn wall_load_weight_and_water_height_of_a_still_tank() {
    let case = still_water(
        r#"
        [[fluid]]
        min = [0.0, 0.0]
        max = [1.0, 1.0]
        [[wall]]
        name = "tank"
        min = [0.0, 0.0]
        max = [1.0, 1.2]
        faces = ["x-", "y-"]
        [[wall]]
        name = "right"
        min = [0.0, -0.06]
        max = [1.0, 1.2]
        faces = ["x+"]
        [[gauge]]
        name = "right"
        kind = "force"
        on = "right"
        [[gauge]]
        name = "tank"
        kind = "force"
        on = "wall.0"
        [[gauge]]
        name = "h"
        kind = "water_height"
        at = [0.5]
        [[gauge]]
        name = "dry"
        kind = "water_height"
        at = [1.11]
        "#,
    );
    let g = settled_gauges(&case);
    let thrust = 0.5 * RHO * G * 1.0f64.powi(2);
    let fx = column(&case, &g, "right.fx");
    println!("right wall: fx = {fx:.1} N/m, expected {thrust:.1} N/m: error {:.2} %", 100.0 * (fx / thrust - 1.0));
    assert!((fx / thrust - 1.0).abs() < 0.02, "load on the right wall {fx} N/m, expected {thrust} N/m");

    let weight = surge_core::geometry::fill(&case).fluid_count() as f64 * case.mass * G;
    let fy = column(&case, &g, "right.fy") + column(&case, &g, "tank.fy");
    println!("walls: fy = {fy:.1} N/m, weight {weight:.1} N/m: error {:.3} %", 100.0 * (-fy / weight - 1.0));
    assert!((-fy / weight - 1.0).abs() < 0.01, "vertical load {fy} N/m, weight {weight} N/m");

    let h = column(&case, &g, "h");
    println!("water height {h:.4} m, depth 1 m: error {:.1} mm", 1e3 * (h - 1.0));
    assert!((h - 1.0).abs() < 0.5 * case.dp, "water height {h} m");
    assert_eq!(column(&case, &g, "dry"), 0.0, "a dry gauge reads 0");
}

/// A box 0.2 m x 0.2 m held under water (its top 0.4 m deep, tank 1 m wide, water 1 m
/// deep). The fluid's force on it is the buoyancy `rho g V` (Archimedes) within 2 % (the
/// issue's bound), upward, with no horizontal force (within 0.5 % of the buoyancy) and no
/// moment about its centre (within 0.5 % of buoyancy x side). V is the box given in the
/// case, 0.2 m x 0.2 m: its particles fill it on the dp lattice (10 x 10, centres dp/2
/// inside its faces) and the fluid around starts dp/2 outside them, so the surface between
/// solid and fluid is the box's own, as for walls. Measured: 1.4 % above (with V the hull of
/// the particles' centres, 0.18 m x 0.18 m, it would be 25 %); fx and mz are 0 to rounding
/// (the case is symmetric).
#[test]
fn a_submerged_box_feels_the_buoyancy() {
    let case = still_water(
        r#"
        [[fluid]]
        min = [0.0, 0.0]
        max = [0.4, 1.0]
        [[fluid]]
        min = [0.6, 0.0]
        max = [1.0, 1.0]
        [[fluid]]
        min = [0.4, 0.6]
        max = [0.6, 1.0]
        [[fluid]]
        min = [0.4, 0.0]
        max = [0.6, 0.4]
        [[wall]]
        min = [0.0, 0.0]
        max = [1.0, 1.2]
        faces = ["x-", "x+", "y-"]
        [[obstacle]]
        name = "box"
        min = [0.4, 0.4]
        max = [0.6, 0.6]
        [[gauge]]
        name = "box"
        kind = "force"
        on = "box"
        "#,
    );
    let g = settled_gauges(&case);
    let buoyancy = RHO * G * 0.2 * 0.2;
    let (fx, fy, mz) = (column(&case, &g, "box.fx"), column(&case, &g, "box.fy"), column(&case, &g, "box.mz"));
    println!(
        "box: fx = {fx:.2} N/m, fy = {fy:.2} N/m (buoyancy {buoyancy:.2} N/m: error {:.2} %), mz = {mz:.3} N",
        100.0 * (fy / buoyancy - 1.0)
    );
    assert!((fy / buoyancy - 1.0).abs() < 0.02, "vertical force {fy} N/m, buoyancy {buoyancy} N/m");
    assert!(fx.abs() < 0.005 * buoyancy, "horizontal force {fx} N/m");
    assert!(mz.abs() < 0.005 * buoyancy * 0.2, "moment {mz} N");
}

/// In 3D, water 0.4 m deep in a closed box 0.5 m x 0.5 m (dp = 0.05 m, 10 particles across;
/// 0.3 s of settling, then averaged over 5 samples 0.05 s apart): the fluid's force on the
/// box is its weight, straight down, within 2 % (coarse, and still sloshing a little), and
/// by symmetry the horizontal forces and the moments about the box's centre vanish (within
/// 0.5 % of the weight, times 0.5 m for the moments). Measured: weight +0.02 %, the others
/// below 1e-6 of their bound's scale.
#[test]
fn a_3d_tank_carries_the_weight_of_its_water() {
    let text = r#"
        dp = 0.05
        [physics]
        body_force = [0.0, 0.0, -9.81]
        viscosity = { kind = "artificial", alpha = 0.1 }
        [time]
        end = 1.0
        [[fluid]]
        min = [0.0, 0.0, 0.0]
        max = [0.5, 0.5, 0.4]
        [[wall]]
        min = [0.0, 0.0, 0.0]
        max = [0.5, 0.5, 0.6]
        [[gauge]]
        name = "box"
        kind = "force"
        on = "wall.0"
    "#;
    let case = Case::from_str(text, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(columns(&case), ["box.fx", "box.fy", "box.fz", "box.mx", "box.my", "box.mz"]);
    let mut sim = sim(&case, 0);
    let mut g = [0.0; 6];
    for k in 0..5 {
        sim.advance_to(0.3 + 0.05 * k as f64).unwrap_or_else(|e| panic!("{e}"));
        for (m, v) in g.iter_mut().zip(sim.gauges().unwrap()) {
            *m += v / 5.0;
        }
    }
    let weight = surge_core::geometry::fill(&case).fluid_count() as f64 * case.mass * G;
    println!("3D tank: F = {:?} N, M = {:?} N m, weight {weight:.2} N", &g[..3], &g[3..]);
    println!("fz error {:.2} %", 100.0 * (-g[2] / weight - 1.0));
    assert!((-g[2] / weight - 1.0).abs() < 0.02, "vertical force {} N, weight {weight} N", g[2]);
    for (k, name) in ["fx", "fy"].iter().enumerate() {
        assert!(g[k].abs() < 0.005 * weight, "{name} = {} N", g[k]);
    }
    for (k, name) in ["mx", "my", "mz"].iter().enumerate() {
        assert!(g[3 + k].abs() < 0.005 * weight * 0.5, "{name} = {} N m", g[3 + k]);
    }
}
