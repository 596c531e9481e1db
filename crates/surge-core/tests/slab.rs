//! Filling one slab of a case (what a rank of a decomposed run builds): the particles of a
//! slab along x, y or z are exactly those of the whole fill that lie in it, in the same order
//! with the same ids and every field bit for bit, and the slabs of a cut into 1, 2 or 3 put
//! back together (by id) are the whole fill. Shipped configs at their own dp (boxes, a
//! breakwater read from an STL, a cylinder pier with an inlet, hydrostatic starts), a 2D
//! channel with an inlet, and a torus of fluid in a torus wall (an STL) with a sphere and a
//! box obstacle. The census's layer weights are those the whole fill gives a grid's layers.

use std::path::{Path, PathBuf};
use surge_core::geometry::{census, fill, fill_range, fill_slab, Census, Filled, Layers, Slab};
use surge_core::grid::Grid;
use surge_core::mesh::{torus_triangles, write_binary_stl};
use surge_core::Case;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn load(rel: &str) -> Case {
    Case::from_file(&repo(rel), &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Every field of every particle, as bits.
#[allow(clippy::type_complexity)]
fn bits(f: &Filled) -> (Vec<u32>, Vec<[u64; 3]>, Vec<[u64; 3]>, Vec<u32>, Vec<u8>, Vec<[u32; 4]>) {
    (
        f.id.clone(),
        f.pos.iter().map(|p| p.map(f64::to_bits)).collect(),
        f.vel.iter().map(|p| p.map(f64::to_bits)).collect(),
        f.rel_density.iter().map(|d| d.to_bits()).collect(),
        f.kind.iter().map(|&k| k as u8).collect(),
        f.wall.iter().map(|w| w.map(f32::to_bits)).collect(),
    )
}

fn assert_same(a: &Filled, b: &Filled, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: particle counts");
    assert!(bits(a) == bits(b), "{what}: the particles differ");
}

/// Cuts of `whole`'s particles along `axis` into `n` slabs of about equal counts, each cut
/// at a particle's own coordinate (the slabs are half open: it goes to the upper slab).
fn cuts(whole: &Filled, axis: usize, n: usize) -> Vec<f64> {
    let mut c: Vec<f64> = whole.pos.iter().map(|p| p[axis]).collect();
    c.sort_by(f64::total_cmp);
    let mut v = vec![f64::NEG_INFINITY];
    v.extend((1..n).map(|k| c[k * c.len() / n]));
    v.push(f64::INFINITY);
    v
}

/// Along every axis of the case, for 1, 2 and 3 slabs: each slab fill is the whole fill's
/// particles in it, and the slabs together are the whole fill.
fn check(case: &Case, what: &str) {
    let whole = fill(case);
    assert!(whole.len() > 1000, "{what}: {} particles", whole.len());
    assert_eq!(whole.id, (0..whole.len() as u32).collect::<Vec<_>>(), "{what}: ids");
    let c = census(case, None);
    assert_eq!(c.total as usize, whole.len(), "{what}: the census counts every particle");
    assert_eq!(c.fluid as usize, whole.fluid_count(), "{what}: the census counts the fluid");
    for axis in 0..case.dim {
        for n in 1..=3 {
            let bounds = cuts(&whole, axis, n);
            let mut parts = Vec::new();
            for s in bounds.windows(2) {
                let (lo, hi) = (s[0], s[1]);
                let keep = move |x: f64| lo <= x && x < hi;
                let part = fill_slab(case, &c, &Slab { axis, keep: &keep });
                let want = whole.subset(|i| keep(whole.pos[i][axis]));
                let here = format!("{what}, axis {axis}, slab {lo}..{hi} of {n}");
                assert_same(&part, &want, &here);
                if n > 1 {
                    assert!(part.len() < whole.len() && !part.is_empty(), "{here}: {} particles", part.len());
                }
                parts.push(part);
            }
            // Put back together by id: the whole fill.
            let mut all = Filled::default();
            let mut order: Vec<(u32, usize, usize)> = parts
                .iter()
                .enumerate()
                .flat_map(|(p, f)| f.id.iter().enumerate().map(move |(i, &id)| (id, p, i)))
                .collect();
            order.sort_unstable();
            for (id, p, i) in order {
                let f = &parts[p];
                all.id.push(id);
                all.pos.push(f.pos[i]);
                all.vel.push(f.vel[i]);
                all.rel_density.push(f.rel_density[i]);
                all.kind.push(f.kind[i]);
                all.wall.push(f.wall[i]);
            }
            assert_same(&all, &whole, &format!("{what}, axis {axis}: {n} slabs put together"));
        }
    }
    // The census's weights and counts per layer of a grid: those of the whole fill.
    let grid = Grid::new(case, case.split_axis()).unwrap_or_else(|e| panic!("{e}"));
    let layers = Layers { axis: grid.split_axis(), count: grid.layers() as usize, of: &|x| grid.layer_of(x) as usize };
    let weighed = census(case, Some(&layers));
    assert_eq!(weighed.weights, whole.layer_weights(&whole.layers(&grid), &grid), "{what}: layer weights");
    assert!(weighed.weights.iter().filter(|&&w| w > 0).count() > 1, "{what}: weights in one layer only");
    // And its particles per layer: those of the whole fill.
    let mut counts = vec![0u64; grid.layers() as usize];
    for l in whole.layers(&grid) {
        counts[l as usize] += 1;
    }
    assert_eq!(weighed.counts, counts, "{what}: particles per layer");
}

#[test]
fn slabs_of_shipped_configs_are_the_whole_fill_restricted() {
    for rel in [
        "configs/dam_break_2d.toml",
        "configs/hydrostatic_2d.toml",
        "configs/dam_break_obstacle_2d.toml",
        "configs/floating_box_waves_2d.toml",
        "configs/dam_break_3d.toml",
        "configs/dam_break_breakwater_3d.toml",
        "configs/channel_pier_3d.toml",
        "tests/cases/open_channel_2d.toml",
    ] {
        check(&load(rel), rel);
    }
}

#[test]
fn slabs_of_a_torus_in_a_torus_wall_from_an_stl_are_the_whole_fill_restricted() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slab");
    std::fs::create_dir_all(&dir).unwrap();
    let stl = dir.join("torus.stl");
    std::fs::write(&stl, write_binary_stl(&torus_triangles([0.0, 0.0, 0.5], 1.0, 0.5, 48, 24))).unwrap();
    let tor = stl.display().to_string().replace('\\', "/");
    let text = format!(
        "time = {{ end = 1.0 }}\nphysics = {{ body_force = [0.0, 0.0, -9.81] }}\ndp = 0.05\n\
         fluid = [{{ shape = \"mesh\", file = \"{tor}\" }},\n\
                  {{ min = [-1.2, -1.2, 0.05], max = [-0.6, 1.2, 0.6] }}]\n\
         wall = [{{ shape = \"mesh\", file = \"{tor}\", layers = 3 }},\n\
                 {{ min = [-2.0, -2.0, -0.5], max = [2.0, 2.0, 1.5], faces = [\"x-\", \"y+\", \"z-\"], layers = 2 }}]\n\
         obstacle = [{{ shape = \"sphere\", centre = [1.0, 0.0, 0.5], radius = 0.2 }},\n\
                     {{ min = [0.9, 1.5, 0.0], max = [1.1, 1.7, 0.2] }}]"
    );
    let case = Case::from_str(&text, &[]).unwrap_or_else(|e| panic!("{e}"));
    check(&case, "torus");
    // On one thread too (the whole fill then pushes straight into its arrays).
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| {
        let whole = fill(&case);
        let part = fill_range(&case, 0, 0.0..0.7);
        assert_same(&part, &whole.subset(|i| (0.0..0.7).contains(&whole.pos[i][0])), "torus on one thread");
    });
}

/// A census of another case is refused, not silently misnumbered.
#[test]
#[should_panic(expected = "the census is not of this case")]
fn a_census_of_another_case_is_refused() {
    let a = load("configs/dam_break_2d.toml");
    let b = Case::from_file(&repo("configs/dam_break_2d.toml"), &["dp=0.01".into()]).unwrap();
    let other: Census = census(&b, None);
    let keep = |_: f64| true;
    fill_slab(&a, &other, &Slab { axis: 0, keep: &keep });
}
