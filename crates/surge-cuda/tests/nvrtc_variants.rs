//! Every specialisation of the kernels compiles with NVRTC (no GPU needed): 2 kernels ×
//! 2 viscosities × 3 density diffusions × 2 shiftings × 2 dimensions × (gamma 7 or not) ×
//! 2 time schemes; and mDBC (no-slip, free slip, the wall's velocity) with each kernel,
//! viscosity, dimension and neighbour traversal (`gpu.traversal`; the 2D base is periodic along the key's fastest
//! axis, where `ranges` falls back to `cells`), its values in the velocity buffer (walls at
//! rest) or, with a force gauge, in their own; the cell table of one bin a cell; and an
//! obstacle of the other slip.
//! NVRTC must be present where `CI` or `SURGE_REQUIRE_NVRTC` is set (CI installs the
//! nvidia-cuda-nvrtc wheel); elsewhere the test says it skipped.

use surge_core::grid::Grid;
use surge_core::Case;
use surge_cuda::compile::{compile, defines};

const BASE_2D: &str = r#"
dp = 0.05
[domain]
min = [0.0, -0.2]
max = [1.0, 1.2]
periodic = ["x"]
[physics]
body_force = [0.0, -9.81]
[time]
end = 1.0
[[fluid]]
min = [0.0, 0.1]
max = [1.0, 0.5]
[[wall]]
min = [0.0, 0.1]
max = [1.0, 0.9]
faces = ["y-", "y+"]
"#;

const BASE_3D: &str = r#"
dp = 0.1
[physics]
body_force = [0.0, 0.0, -9.81]
[time]
end = 1.0
[[fluid]]
min = [0.0, 0.0, 0.0]
max = [1.0, 1.0, 0.5]
[[wall]]
min = [0.0, 0.0, 0.0]
max = [1.0, 1.0, 1.0]
"#;

#[test]
fn every_kernel_specialisation_compiles() {
    let required = std::env::var_os("CI").is_some() || std::env::var_os("SURGE_REQUIRE_NVRTC").is_some();
    if let Err(e) = surge_cuda::nvrtc_version() {
        assert!(!required, "NVRTC is required here: {e}");
        eprintln!("skipped: {e}");
        return;
    }
    // Compile for real, not from a cache another run left behind.
    let cache = std::env::temp_dir().join(format!("surge-nvrtc-test-{}", std::process::id()));
    std::env::set_var("SURGE_CACHE_DIR", &cache);
    let mut count = 0;
    let t0 = std::time::Instant::now();
    for base in [BASE_2D, BASE_3D] {
        for kernel in ["wendland_c2", "cubic_spline"] {
            for visc in [r#"{kind="artificial",alpha=0.02}"#, r#"{kind="laminar",nu=1e-6}"#] {
                for diff in
                    [r#"{kind="none"}"#, r#"{kind="molteni_colagrossi",delta=0.1}"#, r#"{kind="fourtakas",delta=0.1}"#]
                {
                    for shift in [r#"{kind="none"}"#, r#"{kind="lind"}"#] {
                        for (gamma, scheme) in
                            [("7.0", "symplectic"), ("3.0", "symplectic"), ("7.0", "verlet"), ("3.0", "verlet")]
                        {
                            let o: Vec<String> = [
                                format!("time.scheme=\"{scheme}\""),
                                format!("physics.kernel=\"{kernel}\""),
                                format!("physics.viscosity={visc}"),
                                format!("physics.density_diffusion={diff}"),
                                format!("physics.shifting={shift}"),
                                format!("physics.eos.gamma={gamma}"),
                            ]
                            .into();
                            let case = Case::from_str(base, &o).unwrap_or_else(|e| panic!("{e}"));
                            let grid = Grid::new(&case, case.split_axis()).unwrap();
                            let d = defines(&case, &grid, 1000);
                            assert_eq!(d["INFO_PACKED"], "1");
                            let c = compile(&d, "compute_90").unwrap_or_else(|e| panic!("{o:?}: {e}"));
                            assert!(!c.cached);
                            for k in [
                                "forces_kernel",
                                "update_kernel",
                                "rekey_kernel",
                                "gauge_sums_kernel",
                                "boundary_loads_kernel",
                            ] {
                                assert!(c.ptx.contains(&format!(".entry {k}")), "{k} missing for {o:?}");
                            }
                            count += 1;
                        }
                    }
                }
            }
        }
    }
    for base in [BASE_2D, BASE_3D] {
        for kernel in ["wendland_c2", "cubic_spline"] {
            for visc in [r#"{kind="artificial",alpha=0.02}"#, r#"{kind="laminar",nu=1e-6}"#] {
                // The walls at rest keep the mDBC values in the velocity buffer; a force gauge
                // keeps them in a buffer of their own (compile::mdbc_in_vel).
                for (slip, traversal, gauge) in [
                    ("false", "cells", false),
                    ("false", "ranges", false),
                    ("true", "cells", false),
                    ("true", "ranges", false),
                    ("false", "ranges", true),
                    ("true", "cells", true),
                    ("\"wall\"", "ranges", false),
                    ("\"wall\"", "cells", true),
                    ("true", "pencil", false),
                    ("true", "cta", false),
                ] {
                    let mut o: Vec<String> = [
                        format!("physics.kernel=\"{kernel}\""),
                        format!("physics.viscosity={visc}"),
                        format!("physics.boundary={{kind=\"mdbc\",slip={slip}}}"),
                        format!("gpu.traversal=\"{traversal}\""),
                    ]
                    .into();
                    if gauge {
                        o.push(r#"gauge=[{kind="force", name="f", on="wall.0"}]"#.into());
                    }
                    let case = Case::from_str(base, &o).unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(surge_cuda::compile::mdbc_in_vel(&case), !gauge);
                    let grid = Grid::new(&case, case.split_axis()).unwrap();
                    let c =
                        compile(&defines(&case, &grid, 1000), "compute_90").unwrap_or_else(|e| panic!("{o:?}: {e}"));
                    for k in ["forces_kernel", "mdbc_kernel", "update_kernel"] {
                        assert!(c.ptx.contains(&format!(".entry {k}")), "{k} missing for {o:?}");
                    }
                    count += 1;
                }
            }
        }
    }
    // The cell table of one bin a cell (grids past 2^31 cells; forced here).
    std::env::set_var("SURGE_CUDA_TABLE_BINS", "1");
    for base in [BASE_2D, BASE_3D] {
        for (boundary, traversal) in
            [("dbc", "cells"), ("dbc", "ranges"), ("mdbc", "ranges"), ("dbc", "pencil"), ("dbc", "cta")]
        {
            let o: Vec<String> =
                [format!("physics.boundary={{kind=\"{boundary}\"}}"), format!("gpu.traversal=\"{traversal}\"")].into();
            let case = Case::from_str(base, &o).unwrap_or_else(|e| panic!("{e}"));
            let grid = Grid::new(&case, case.split_axis()).unwrap();
            // And ids past 2^30: two words of id and kind.
            let d = defines(&case, &grid, 1 << 31);
            assert_eq!((d["TABLE_BINS"].as_str(), d["INFO_PACKED"].as_str()), ("1", "0"));
            let c = compile(&d, "compute_90").unwrap_or_else(|e| panic!("{o:?}: {e}"));
            for k in ["forces_kernel", "order_bins_kernel", "gauge_sums_kernel", "boundary_loads_kernel"] {
                assert!(c.ptx.contains(&format!(".entry {k}")), "{k} missing for {o:?}");
            }
            count += 1;
        }
    }
    std::env::remove_var("SURGE_CUDA_TABLE_BINS");
    // mDBC no-slip with an obstacle of free slip, with one and two words of id and kind.
    for (base, obstacle) in [
        (BASE_2D, r#"obstacle=[{min=[0.4,0.6], max=[0.6,0.8], slip=true}]"#),
        (BASE_3D, r#"obstacle=[{min=[0.4,0.4,0.6], max=[0.6,0.6,0.8], slip=true}]"#),
    ] {
        let o: Vec<String> = [r#"physics.boundary={kind="mdbc"}"#.to_string(), obstacle.to_string()].into();
        let case = Case::from_str(base, &o).unwrap_or_else(|e| panic!("{e}"));
        let grid = Grid::new(&case, case.split_axis()).unwrap();
        for ids in [1000, 1 << 31] {
            let d = defines(&case, &grid, ids);
            assert_eq!(d["MDBC_OTHER_SLIP"], "1");
            let c = compile(&d, "compute_90").unwrap_or_else(|e| panic!("{o:?}: {e}"));
            assert!(c.ptx.contains(".entry mdbc_kernel"), "mdbc_kernel missing for {o:?}");
            count += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    println!("{count} specialisations compiled in {:.1} s", t0.elapsed().as_secs_f64());
    assert_eq!(count, 192 + 80 + 10 + 4);
}
