//! Shapes beyond boxes, filled on the dp lattice: volumes against the exact ones, a box
//! given as a mesh filling exactly like the box, wall normals, fluid cut away from solids,
//! counts that match the fill, and bad geometry refused in one sentence naming the shape.

use std::path::PathBuf;
use surge_core::buffers::Kind;
use surge_core::geometry::{counts, fill, fluid_counts, solid_ids};
use surge_core::mesh::{box_triangles, torus_triangles, write_ascii_stl, write_binary_stl, Tri};
use surge_core::Case;

/// A folder for this test's STL files, inside the build's target folder.
fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("shapes-{name}"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write `tris` as a binary (or ASCII) STL and return its path as a TOML string.
fn stl(name: &str, tris: &[Tri], ascii: bool) -> String {
    let path = dir("stl").join(name);
    if ascii {
        std::fs::write(&path, write_ascii_stl(tris, name)).unwrap();
    } else {
        std::fs::write(&path, write_binary_stl(tris)).unwrap();
    }
    path.display().to_string().replace('\\', "/")
}

fn case(body: &str) -> Case {
    let text = format!("time = {{ end = 1.0 }}\nphysics = {{ body_force = [0.0, 0.0, -9.81] }}\n{body}");
    Case::from_str(&text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn case_2d(body: &str) -> Case {
    let text = format!("time = {{ end = 1.0 }}\nphysics = {{ body_force = [0.0, -9.81] }}\n{body}");
    Case::from_str(&text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn filled_volume(c: &Case) -> f64 {
    fluid_counts(c)[0] as f64 * c.dp.powi(c.dim as i32)
}

/// The stated tolerance of a filled volume: `|N dp^3 - V| / V <= 0.5 (dp/R)^1.5`, R the
/// shape's smallest radius of curvature (or half side). The particles that are wrongly in or
/// out lie in a surface shell one dp thick, whose share of the volume is ~ 3 dp/R; their
/// errors partly cancel along the surface, so the sum shrinks faster than dp/R. At 20
/// particles per radius this is 0.56 % (the issue asks for 1 %); measured errors are at most
/// half the tolerance at 10, 20 and 40 particles per radius. In 2D the boundary has R/dp
/// rows rather than (R/dp)^2, which average less: the coefficient is 1 (a circle measures
/// 0.59 % at 20 particles per radius, 0.05 % at 40, against 1.1 % and 0.4 %).
fn tolerance(dp: f64, r: f64, dim: usize) -> f64 {
    (if dim == 3 { 0.5 } else { 1.0 }) * (dp / r).powf(1.5)
}

fn check_volume(what: &str, c: &Case, exact: f64, r: f64) {
    let got = filled_volume(c);
    let rel = (got - exact).abs() / exact;
    let tol = tolerance(c.dp, r, c.dim);
    assert!(rel <= tol, "{what} at dp = {}: volume {got} vs {exact}: {rel:.2e} > {tol:.2e}", c.dp);
    if (r / c.dp - 20.0).abs() < 1e-9 {
        assert!(rel <= 0.01, "{what}: 20 particles per radius must be within 1 %");
    }
}

#[test]
fn filled_volumes_match_the_exact_ones() {
    use std::f64::consts::PI;
    let r = 0.5;
    let tor = torus_triangles([0.0, 0.0, 0.0], 1.0, r, 96, 48);
    let torus = stl("torus.stl", &tor, false);
    let cube = stl("cube_ascii.stl", &box_triangles([-0.5; 3], [0.5; 3]), true);
    for n in [10.0, 20.0, 40.0] {
        let dp = r / n;
        let c = case(&format!("dp = {dp}\nfluid = [{{ shape = \"sphere\", centre = [0.1, 0.2, 0.3], radius = {r} }}]"));
        check_volume("sphere", &c, 4.0 / 3.0 * PI * r.powi(3), r);
        let c = case(&format!(
            "dp = {dp}\nfluid = [{{ shape = \"cylinder\", centre = [0.1, 0.2, 0.3], axis = [1.0, 2.0, 0.5], radius = {r}, length = 1.3 }}]"
        ));
        check_volume("cylinder", &c, PI * r * r * 1.3, r);
        // The exact volume of the triangulated torus (not of the smooth one it samples).
        let c = case(&format!("dp = {dp}\nfluid = [{{ shape = \"mesh\", file = \"{torus}\" }}]"));
        check_volume("STL torus", &c, surge_core::mesh::volume(&tor), r);
        // A cube turned off the lattice axes, so that its faces cut lattice rows anywhere.
        let c = case(&format!(
            "dp = {dp}\nfluid = [{{ shape = \"mesh\", file = \"{cube}\", rotate = {{ axis = [1.0, 2.0, 3.0], degrees = 33.0 }} }}]"
        ));
        check_volume("STL cube, rotated", &c, 1.0, r);
        // Axis-aligned with a side that dp divides, the cube fills exactly.
        let c = case(&format!("dp = {dp}\nfluid = [{{ shape = \"mesh\", file = \"{cube}\" }}]"));
        assert_eq!(fluid_counts(&c)[0], (2.0 * n) as u64 * (2.0 * n) as u64 * (2.0 * n) as u64);
    }
    // 2D: a circle and a polygon (a triangle), areas.
    for n in [10.0, 20.0, 40.0] {
        let dp = r / n;
        let c = case_2d(&format!("dp = {dp}\nfluid = [{{ shape = \"sphere\", centre = [0.1, 0.2], radius = {r} }}]"));
        check_volume("circle", &c, PI * r * r, r);
    }
}

/// A box given as a mesh fills with exactly the particles of the box; turned by a rotation,
/// the same box given as a box and as a mesh still fills alike.
#[test]
fn a_box_filled_as_a_mesh_equals_the_box() {
    let cube = stl("box.stl", &box_triangles([0.25, 0.125, 0.0], [1.0, 0.75, 0.5]), false);
    let a = fill(&case("dp = 0.025\nfluid = [{ min = [0.25, 0.125, 0.0], max = [1.0, 0.75, 0.5] }]"));
    let b = fill(&case(&format!("dp = 0.025\nfluid = [{{ shape = \"mesh\", file = \"{cube}\" }}]")));
    assert!(a.len() > 1000);
    assert_eq!((&a.pos, &a.vel, &a.rel_density, &a.kind, &a.id), (&b.pos, &b.vel, &b.rel_density, &b.kind, &b.id));

    let place = "rotate = { axis = [1.0, 1.0, 0.2], degrees = 30.0 }, translate = [0.1, 0.2, 0.3], scale = 2.0";
    let a =
        fill(&case(&format!("dp = 0.02\nfluid = [{{ min = [0.25, 0.125, 0.0], max = [1.0, 0.75, 0.5], {place} }}]")));
    let b = fill(&case(&format!("dp = 0.02\nfluid = [{{ shape = \"mesh\", file = \"{cube}\", {place} }}]")));
    assert!(a.len() > 10000);
    assert_eq!(a.pos, b.pos);
}

/// The layers of a sphere's wall: outside it (a spherical tank) their normals point to the
/// centre, inside it (a ball's skin) away from it; the stored distance is the distance to the
/// sphere, below `layers * dp`, and each side has about `layers` shells of particles.
#[test]
fn sphere_wall_normals_are_radial() {
    let (c0, r, dp) = ([0.5, 0.5, 0.5], 0.4, 0.02);
    for (side, sign) in [("outside", -1.0), ("inside", 1.0)] {
        let c = case(&format!(
            "dp = {dp}\nfluid = [{{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}]\n\
             wall = [{{ shape = \"sphere\", centre = {c0:?}, radius = {r}, layers = 3, side = \"{side}\" }}]"
        ));
        let f = fill(&c);
        let ids = solid_ids(&c, surge_core::case::Solid::Wall(0));
        let mut shell = 0.0;
        for i in ids.start as usize..ids.end as usize {
            assert_eq!(f.kind[i], Kind::Boundary);
            let p = f.pos[i];
            let d: [f64; 3] = std::array::from_fn(|a| p[a] - c0[a]);
            let rho = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let w = f.wall[i];
            for a in 0..3 {
                assert!((w[a] as f64 - sign * d[a] / rho).abs() < 1e-6, "{side}: particle {i} at {p:?}: normal {w:?}");
            }
            assert!(((w[3] as f64) - (rho - r).abs()).abs() < 1e-6 && w[3] > 0.0 && (w[3] as f64) < 3.0 * dp, "{w:?}");
            shell += 1.0;
        }
        // The lattice points fill the shell three dp thick on that side, to within 3 %.
        let t = 3.0 * dp;
        let (lo, hi) = if sign < 0.0 { (r, r + t) } else { (r - t, r) };
        let exact = 4.0 / 3.0 * std::f64::consts::PI * (hi.powi(3) - lo.powi(3));
        let got = shell * dp.powi(3);
        assert!((got / exact - 1.0).abs() < 0.03, "{side}: shell {got} vs {exact}");
    }
}

/// Fluid filling a box around a sphere obstacle and a polygon prism keeps out of both,
/// at least dp/2 from their surfaces; the counts agree with the fill, solid by solid.
#[test]
fn fluid_is_cut_away_from_shaped_solids_and_counts_agree() {
    let dp = 0.025;
    let cube = stl("tank.stl", &box_triangles([0.0; 3], [1.0, 0.6, 0.8]), false);
    let c = case(&format!(
        "dp = {dp}\nfluid = [{{ min = [0.0, 0.0, 0.0], max = [1.0, 0.6, 0.5] }}]\n\
         wall = [{{ shape = \"mesh\", file = \"{cube}\", layers = 2 }}]\n\
         obstacle = [{{ shape = \"sphere\", centre = [0.3, 0.3, 0.2], radius = 0.12 }},\n\
                     {{ shape = \"polygon\", points = [[0.6, 0.1], [0.8, 0.1], [0.7, 0.4]], extrude = [0.0, 0.3] }}]"
    ));
    let f = fill(&c);
    let n = counts(&c);
    assert_eq!(n.total() as usize, f.len());
    assert_eq!(n.fluid as usize, f.fluid_count());
    // The mesh tank is the box [0,1]x[0,0.6]x[0,0.8]: the fluid box inside it fills whole.
    assert_eq!(n.fluid, 40 * 24 * 20 - cut_by(&c, &f));
    for i in 0..f.len() {
        if f.kind[i] != Kind::Fluid {
            continue;
        }
        let p = f.pos[i];
        let to_sphere = ((p[0] - 0.3).powi(2) + (p[1] - 0.3).powi(2) + (p[2] - 0.2).powi(2)).sqrt() - 0.12;
        assert!(to_sphere >= 0.5 * dp - 1e-9, "fluid at {p:?} is {to_sphere} from the sphere");
    }
    let mut next = f.fluid_count() as u32;
    for s in
        [surge_core::case::Solid::Wall(0), surge_core::case::Solid::Obstacle(0), surge_core::case::Solid::Obstacle(1)]
    {
        let r = solid_ids(&c, s);
        assert_eq!(r.start, next, "{s:?}");
        assert!(r.end > r.start);
        next = r.end;
    }
    assert_eq!(next as usize, f.len());
    // Both obstacles are filled, and about as many particles as their volumes hold.
    let sphere = n.obstacles[0] as f64 * dp.powi(3);
    assert!((sphere / (4.0 / 3.0 * std::f64::consts::PI * 0.12f64.powi(3)) - 1.0).abs() < 0.05, "{sphere}");
    let prism = n.obstacles[1] as f64 * dp.powi(3);
    assert!((prism / (0.5 * 0.2 * 0.3 * 0.3) - 1.0).abs() < 0.1, "{prism}");
}

/// Fluid particles of the box [0,1]x[0,0.6]x[0,0.5] that the obstacles of the case above
/// remove, counted independently from their exact geometry.
fn cut_by(c: &Case, _f: &surge_core::geometry::Filled) -> u64 {
    let dp = c.dp;
    let mut cut = 0;
    for k in 0..20 {
        for j in 0..24 {
            for i in 0..40 {
                let p = [(i as f64 + 0.5) * dp, (j as f64 + 0.5) * dp, (k as f64 + 0.5) * dp];
                let s = ((p[0] - 0.3).powi(2) + (p[1] - 0.3).powi(2) + (p[2] - 0.2).powi(2)).sqrt() - 0.12;
                // The prism: triangle (0.6,0.1) (0.8,0.1) (0.7,0.4), z in [0, 0.3].
                let tri = [[0.6, 0.1], [0.8, 0.1], [0.7, 0.4]];
                let mut d_out: f64 = 0.0;
                let mut inside = true;
                let mut d_edge = f64::INFINITY;
                for e in 0..3 {
                    let (a, b) = (tri[e], tri[(e + 1) % 3]);
                    let ab = [b[0] - a[0], b[1] - a[1]];
                    let t = (((p[0] - a[0]) * ab[0] + (p[1] - a[1]) * ab[1]) / (ab[0] * ab[0] + ab[1] * ab[1]))
                        .clamp(0.0, 1.0);
                    let q = [a[0] + t * ab[0], a[1] + t * ab[1]];
                    d_edge = d_edge.min(((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt());
                    if ab[0] * (p[1] - a[1]) - ab[1] * (p[0] - a[0]) < 0.0 {
                        inside = false;
                    }
                }
                let dz = (p[2] - 0.3).max(0.0);
                if inside {
                    d_out = dz;
                } else {
                    d_out = d_out.max((d_edge * d_edge + dz * dz).sqrt());
                }
                let in_prism = inside && p[2] <= 0.3;
                if s < 0.5 * dp - 1e-9 * dp || in_prism || d_out < 0.5 * dp - 1e-9 * dp {
                    cut += 1;
                }
            }
        }
    }
    cut
}

fn error(body: &str, dim: usize) -> String {
    let g = if dim == 2 { "[0.0, -9.81]" } else { "[0.0, 0.0, -9.81]" };
    let text = format!("time = {{ end = 1.0 }}\nphysics = {{ body_force = {g} }}\n{body}");
    match Case::from_str(&text, &[]) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "{s}");
            s
        }
    }
}

#[test]
fn bad_geometry_is_refused_naming_the_shape() {
    let open = stl("open.stl", &box_triangles([0.0; 3], [1.0; 3])[..11], false);
    let garbage = dir("stl").join("garbage.stl");
    std::fs::write(&garbage, "not a mesh").unwrap();
    let garbage = garbage.display().to_string().replace('\\', "/");
    let cube = stl("unit.stl", &box_triangles([0.0; 3], [1.0; 3]), false);
    let fluid3 = "fluid = [{ min = [0.1, 0.1, 0.1], max = [0.3, 0.3, 0.3] }]";
    for (body, dim, want) in [
        (
            format!("dp = 0.05\n{fluid3}\nwall = [{{ shape = \"mesh\", file = \"no/such.stl\" }}]"),
            3,
            vec!["field `wall[0].file`", "cannot read `no/such.stl`"],
        ),
        (format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"mesh\", file = \"{garbage}\" }}]"), 3, vec!["field `obstacle[0].file`", "not an STL file"]),
        (
            format!("dp = 0.05\n{fluid3}\nwall = [{{}}, {{}}, {{ shape = \"mesh\", file = \"{open}\" }}]")
                .replace("{}", "{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }"),
            3,
            vec!["field `wall[2].file`", "not closed: 3 open edges", "the first at (0, 0.5, 1)"],
        ),
        (
            format!(
                "dp = 0.05\ndomain = {{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 2.0] }}\n{fluid3}\n\
                 obstacle = [{{ shape = \"mesh\", file = \"{cube}\", scale = 1000.0 }}]"
            ),
            3,
            vec!["field `domain`", "obstacle[0] spans", "outside the domain", "scale = 0.001"],
        ),
        (format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"sphere\", centre = [0.5, 0.5, 0.5], radius = 0.01 }}]"), 3, vec!["field `obstacle[0]`", "the sphere holds no particle at dp = 0.05"]),
        (
            format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"mesh\", file = \"{cube}\", scale = 1000.0 }}]"),
            3,
            vec!["field `obstacle[0]`", "the mesh spans 8.",  "lattice points at dp = 0.05", "units (`scale`)"],
        ),
        (format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"sphere\", centre = [0.5, 0.5, 0.5], radius = -1.0 }}]"), 3, vec!["field `obstacle[0].radius`", "positive", "-1"]),
        (format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"cylinder\", centre = [0.5, 0.5, 0.5], radius = 0.2, length = 1.0, axis = [0.0, 0.0, 0.0] }}]"), 3, vec!["field `obstacle[0].axis`", "zero vector"]),
        (format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"sphere\", min = [0.5, 0.5, 0.5], radius = 0.2 }}]"), 3, vec!["field `obstacle[0].min`", "does not apply to shape = \"sphere\""]),
        (format!("dp = 0.05\n{fluid3}\nobstacle = [{{ shape = \"polygon\", points = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]] }}]"), 3, vec!["field `obstacle[0].extrude`", "missing"]),
        (format!("dp = 0.05\n{fluid3}\nwall = [{{ shape = \"sphere\", centre = [0.2, 0.2, 0.2], radius = 1.0, faces = [\"x-\"] }}]"), 3, vec!["field `wall[0].faces`", "axis-aligned box wall"]),
        ("dp = 0.05\nfluid = [{ min = [0.1, 0.1], max = [0.3, 0.3] }]\nobstacle = [{ shape = \"mesh\", file = \"x.stl\" }]".into(), 2, vec!["field `obstacle[0].file`", "a 2D case takes a polygon"]),
        ("dp = 0.05\nfluid = [{ shape = \"polygon\", points = [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]] }]".into(), 2, vec!["field `fluid[0].points`", "encloses no area"]),
        (
            "dp = 0.05\nfluid = [{ min = [0.0, 0.0], max = [1.0, 1.0] }, { shape = \"sphere\", centre = [0.5, 0.5], radius = 0.2 }]".into(),
            2,
            vec!["field `fluid[1]`", "holds no particle", "within dp/2 of solids"],
        ),
    ] {
        let e = error(&body, dim);
        for w in &want {
            assert!(e.contains(w), "`{w}` not in: {e}");
        }
        assert!(e.starts_with("<string>: field `"), "{e}");
    }
}

/// The fill runs in parallel over blocks of lattice rows: on 1, 2 and 3 threads (each cutting
/// the rows differently) every array is the same, bit for bit, and the counts, also counted in
/// parallel, match it solid by solid. A torus of fluid in a torus wall (an STL) around a
/// sphere obstacle, a box fluid cut by them and a box obstacle; and a 2D case.
#[test]
fn the_parallel_fill_is_the_same_on_any_thread_count() {
    let dp = 0.05;
    let tor = stl("torus_par.stl", &torus_triangles([0.0, 0.0, 0.5], 1.0, 0.5, 48, 24), false);
    let c3 = case(&format!(
        "dp = {dp}\nfluid = [{{ shape = \"mesh\", file = \"{tor}\" }},\n\
                   {{ min = [-1.2, -1.2, 0.05], max = [-0.6, 1.2, 0.6] }}]\n\
         wall = [{{ shape = \"mesh\", file = \"{tor}\", layers = 3 }},\n\
                 {{ min = [-2.0, -2.0, -0.5], max = [2.0, 2.0, 1.5], faces = [\"x-\", \"y+\", \"z-\"], layers = 2 }}]\n\
         obstacle = [{{ shape = \"sphere\", centre = [1.0, 0.0, 0.5], radius = 0.2 }},\n\
                     {{ min = [0.9, 1.5, 0.0], max = [1.1, 1.7, 0.2] }}]"
    ));
    let c2 = case_2d(&format!(
        "dp = {}\nfluid = [{{ shape = \"sphere\", centre = [0.5, 0.5], radius = 0.4 }}]\n\
         wall = [{{ shape = \"polygon\", points = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], layers = 3 }}]\n\
         obstacle = [{{ shape = \"sphere\", centre = [0.5, 0.4], radius = 0.1 }}]",
        dp / 10.0
    ));
    for c in [c3, c2] {
        // Counted again (not the counts the case keeps from its check).
        let uncounted = Case { counted: None, ..c.clone() };
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| (fill(&c), counts(&uncounted)))
        };
        let (a, n) = on(1);
        assert!(a.len() > 20_000, "{}", a.len());
        assert_eq!(a.id, (0..a.len() as u32).collect::<Vec<_>>());
        assert_eq!(n, counts(&c), "the counts of the case as checked");
        assert_eq!(n.total() as usize, a.len());
        assert_eq!(n.fluid as usize, a.fluid_count());
        let mut next = n.fluid as usize;
        for (k, m) in n.walls.iter().chain(&n.obstacles).enumerate() {
            assert!(*m > 0, "solid {k}");
            assert!(a.kind[next..next + *m as usize].iter().all(|&k| k == Kind::Boundary));
            next += *m as usize;
        }
        for threads in [2, 3] {
            let (b, m) = on(threads);
            assert_eq!(m, n, "{threads} threads");
            assert_eq!(a.id, b.id, "{threads} threads");
            assert_eq!(a.kind, b.kind, "{threads} threads");
            let bits = |f: &surge_core::geometry::Filled| {
                let pos: Vec<[u64; 3]> = f.pos.iter().map(|p| p.map(f64::to_bits)).collect();
                let vel: Vec<[u64; 3]> = f.vel.iter().map(|p| p.map(f64::to_bits)).collect();
                let rho: Vec<u32> = f.rel_density.iter().map(|d| d.to_bits()).collect();
                let wall: Vec<[u32; 4]> = f.wall.iter().map(|w| w.map(f32::to_bits)).collect();
                (pos, vel, rho, wall)
            };
            assert!(bits(&a) == bits(&b), "{threads} threads: the particles differ");
        }
    }
}
