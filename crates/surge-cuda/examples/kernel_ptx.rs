//! Write the PTX that NVRTC compiles for a case's kernels, as `surge run --backend cuda` would
//! compile them for an H100 (compute_90), without a GPU. `scripts/kernel_sass.sh` assembles it
//! and counts the force kernel's instructions (docs/PERFORMANCE.md, "The pair body in fewer
//! instructions").
//!
//!     cargo run --release -p surge-cuda --example kernel_ptx -- CONFIG OUT.ptx [KEY=VALUE ...]
//!
//! The overrides are `surge run --set`'s. Prints the support's square (`SUPPORT2 x`). NVRTC
//! must be on LD_LIBRARY_PATH.

use surge_core::Case;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: kernel_ptx CONFIG OUT.ptx [KEY=VALUE ...]");
        std::process::exit(2);
    }
    let run = || -> Result<(), String> {
        // From the file (not its text), so paths in it (a motion's table, a mesh) resolve.
        let case = Case::from_file(std::path::Path::new(&args[1]), &args[3..]).map_err(|e| e.to_string())?;
        let grid = surge_cuda::grid_for(&case)?;
        // One word of id and kind, as a case of fewer than 2^30 particles takes.
        let defines = surge_cuda::compile::defines(&case, &grid, 1 << 20);
        let compiled = surge_cuda::compile::compile(&defines, "compute_90")?;
        // The support's square, which the candidate loop tests r2 against (kernel_sass.sh).
        println!("SUPPORT2 {}", defines["SUPPORT2"].trim_end_matches('f'));
        std::fs::write(&args[2], compiled.ptx).map_err(|e| format!("{}: {e}", args[2]))
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
