//! `surge`: run, check and benchmark SPH cases from the command line, and plot their gauges.

mod plot;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use surge_core::buffers::BufferSet;
use surge_core::case::{Diffusion, Viscosity};
use surge_core::grid::Grid;
use surge_core::Case;
use surge_runtime::{BackendChoice, DeviceRequest, Gpus, Observer, Progress, RunOptions};

/// Exit code of a bad case file or bad arguments.
const EXIT_BAD_INPUT: u8 = 2;
/// Exit code of a run that diverged or could not write its output.
const EXIT_RUN_FAILED: u8 = 1;
/// Exit code of a run stopped by SIGTERM or SIGUSR1 after writing a checkpoint: a job
/// script resubmits itself with `--restart latest` while it sees this code.
const EXIT_INTERRUPTED: u8 = 3;

#[derive(Parser)]
#[command(
    name = "surge",
    version,
    about = "Weakly-compressible SPH free-surface flow simulator",
    long_about = "Weakly-compressible SPH free-surface flow simulator.\n\n\
        A case is a TOML file (see configs/). `surge check CASE` validates it and prints what \
        would run; `surge run CASE` runs it and writes ParaView frames (.vtu + .pvd), gauges.csv \
        and summary.json into out/<case name> (or --out); `surge plot OUT` draws each gauge against \
        time into OUT/plots/, with an experiment's series beside it (--reference).\n\n\
        Several devices: `--devices 0,1,2,3` (GPUs) or `--backend cpu --workers 4`; across nodes, a \
        `--features mpi` build under `mpirun -n N` or `srun` (see slurm/). The results are bitwise \
        those of one device.\n\n\
        Environment: SURGE_LOG (log filter, e.g. debug); SURGE_DEVICE_LINKS=host|process (halo \
        exchanges through host memory everywhere, or between MPI ranks only; by default GPUs of \
        one process copy peer to peer and ranks of one node use CUDA IPC)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a case to its end time.
    #[command(after_help = "Exit codes:\n  \
        0  completed\n  \
        1  the run failed: it diverged, or output could not be written\n  \
        2  bad case file, arguments or checkpoint: nothing was run\n  \
        3  interrupted by SIGTERM or SIGUSR1 (e.g. Slurm's --signal=B:USR1@120): a checkpoint \
        was written at the end of the current step and summary.json says \"interrupted\"; \
        continue with --restart latest")]
    Run {
        /// The case file (TOML).
        case: PathBuf,
        /// Output directory [default: out/<case name>].
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
        /// Stop after this many steps in all, counted from t = 0 (smoke tests).
        #[arg(long)]
        max_steps: Option<u64>,
        /// Continue from a checkpoint: `latest` (the newest usable one in OUT/checkpoints/) or
        /// the path of a checkpoint file. Frames, gauges and the summary go on in OUT; what
        /// came after the checkpoint there is dropped. time.end, time.cfl, time.dt_max,
        /// [output], [[gauge]] and [checkpoint] may change; the rest of the case may not.
        #[arg(long, value_name = "latest|PATH")]
        restart: Option<surge_runtime::RestartFrom>,
        /// Print warnings and errors only: no progress bar or log lines.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Write the particles of a checkpoint as CSV (`id,kind,x,y[,z],vx,vy[,vz],rho,p`, rows in
    /// id order), as a CSV frame of the same time would have them.
    Dump {
        /// A checkpoint file (any rank's file of the checkpoint: all ranks are read).
        checkpoint: PathBuf,
        /// The CSV file to write.
        #[arg(long, value_name = "FILE")]
        csv: PathBuf,
    },
    /// Validate a case and print particle counts, memory, h, c0 and the first dt, without running.
    /// With `--backend cuda --devices 0,1,...`: each GPU's share of the first cut and its memory.
    Check {
        /// The case file (TOML).
        case: PathBuf,
        /// Fill the case and write its particles (kind, object, wall normals and distances)
        /// to DIR/NAME_particles.vtu for ParaView; nothing runs.
        #[arg(long, value_name = "DIR")]
        write_particles: Option<PathBuf>,
        /// Fill the case in memory as a run would and report how long it took (and the
        /// particles filled), writing nothing: how long a large case takes to build.
        #[arg(long)]
        fill: bool,
        /// With --fill: build only what rank R of N MPI ranks (one CPU device each) builds, as
        /// `R/N`: a census of the case (no particle kept) for the first cut, then that rank's
        /// slab; each timed.
        #[arg(long, value_name = "R/N", requires = "fill")]
        slab: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Draw each gauge of a run against time: one PNG per gauge in OUT/plots/.
    ///
    /// Reads the run's `gauges.csv` (`time,<gauge names>`). One chart per gauge, named after
    /// it (`P1.png`); the columns of one gauge with several components, `NAME.fx`, `NAME.fy`,
    /// `NAME.fz`, share the chart `NAME.png`. The time axis is the run's. Prints each gauge's
    /// largest value and its time (and each reference's in the same time span).
    #[command(after_help = "Examples:\n  \
        surge plot out/dam_break_3d\n  \
        surge plot out/spheric_test2 --only 'P*' --average 0.01 \\\n      \
        --reference tests/data/spheric_test2_kleefsman2005.csv --out out/spheric_test2/plots/p_avg10ms\n  \
        surge plot out/spheric_test2 --only P1,H3 --average 0.01 \\\n      \
        --reference tests/data/spheric_test2_kleefsman2005.csv --reference other_code/gauges.csv\n\n\
        Exit codes: 0 plotted; 1 a plot could not be written; 2 a missing or malformed CSV file, or a bad option.")]
    Plot {
        /// A run's output directory, or the path of its `gauges.csv`.
        #[arg(value_name = "RUN")]
        run: PathBuf,
        /// Directory for the PNGs [default: `plots/` beside the `gauges.csv`].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Reference series (an experiment, another code's run) drawn on the same charts: a CSV
        /// with a `time` column and columns named like the gauges; `#` lines are comments, and
        /// `# label: TEXT` names it in the legends (else the file name does). Columns without a
        /// gauge are left out. Give it again for more references, each in its own colour.
        #[arg(long, value_name = "FILE.csv")]
        reference: Vec<PathBuf>,
        /// Centred moving average over this many seconds (the time average of the line through
        /// the samples, so jittered sample times do not move it), applied to the run and the
        /// reference alike, e.g. 0.01 for the 10-ms-averaged pressures of SPHERIC Test 2.
        #[arg(long, value_name = "SECONDS")]
        average: Option<f64>,
        /// Only these gauges: names separated by commas, a trailing `*` matching a prefix
        /// (`P*,H2`).
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        only: Vec<String>,
    },
    /// List GPUs and say whether CUDA, NVRTC and MPI were found.
    Info,
    /// Measure particle-steps per second and bytes per particle on the 2D and 3D dam breaks.
    ///
    /// With several devices it also prints one line per device: particles, cell layers, and
    /// the shares of the step spent computing forces, rebuilding, updating, on exchange not
    /// hidden (exposed), waiting for slower devices, and the load balancer's boundary moves.
    Bench {
        /// Which benchmark cases.
        #[arg(long, value_enum, default_value = "all")]
        cases: BenchCases,
        /// Steps to time (after 5 warm-up steps).
        #[arg(long, default_value_t = 100)]
        steps: u64,
        /// Also append each result as one JSON line to this file (for scripts, e.g. the
        /// scaling harness `cargo bench --bench scaling`).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Time this case file (with its --set options) instead of the built-in cases.
        #[arg(long, value_name = "FILE")]
        case: Option<PathBuf>,
        /// Start from this checkpoint of the case (a file of a run's `OUT/checkpoints/`), so
        /// the timed steps are those of the developed flow, not the first steps at rest. The
        /// case and its --set options must be the run's (checked by the physics hash); with
        /// the built-in cases, name one with --cases.
        #[arg(long, value_name = "CHECKPOINT")]
        from: Option<PathBuf>,
        /// Step the flow to this time (s), untimed, before the timed steps, so they time the
        /// developed flow a run spends its steps on, not the first steps at rest; its
        /// checkpoint is cached (`bench/` in surge's cache, `$SURGE_CACHE_DIR` or
        /// `~/.cache/surge`) for the next bench of the same case. Default: the middle of the
        /// run for the built-in cases (0.5 s in 2D, 0.75 s in 3D: a step there costs the whole
        /// run's average), 0 for a case file; 0 times the first steps at rest.
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        develop_to: Option<f64>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args)]
struct Common {
    /// Execution backend: `auto` takes a GPU when one is usable (driver, GPU and NVRTC found)
    /// and says which, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// CPU threads [default: all cores]: the CPU backend's, and those that count and fill
    /// the case's shapes.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// GPU to run on (CUDA device ordinal); the same as `--devices N`.
    #[arg(long, conflicts_with = "devices")]
    gpu: Option<usize>,
    /// GPUs to run on, one slice of the domain each: `0,1,2,3`, or `all` for every visible
    /// GPU [default: 0].
    #[arg(long, value_name = "LIST|all")]
    devices: Option<String>,
    /// CPU workers (with `--backend cpu`): slices of the domain, each on its share of the
    /// threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    workers: u32,
    /// Override a case value, e.g. `--set time.end=0.3 --set dp=0.01` (repeatable).
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    set: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum BackendArg {
    /// A usable GPU, else the CPU.
    Auto,
    /// CPU cores (rayon).
    Cpu,
    /// An NVIDIA GPU (needs the driver and the NVRTC library; no compile step).
    Cuda,
}

impl Common {
    fn request(&self) -> Result<DeviceRequest, Failure> {
        let backend = match self.backend {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Cpu => BackendChoice::Cpu,
            BackendArg::Cuda => BackendChoice::Cuda,
        };
        let gpus = match (&self.devices, self.gpu) {
            (Some(d), _) if d.trim() == "all" => Gpus::All,
            (Some(d), _) => Gpus::List(
                d.split(',')
                    .map(|x| {
                        x.trim().parse::<usize>().map_err(|_| {
                            Failure(
                                EXIT_BAD_INPUT,
                                format!("--devices {d}: expected GPU numbers separated by commas, or `all`"),
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            (None, Some(g)) => Gpus::List(vec![g]),
            (None, None) => Gpus::Auto,
        };
        if self.workers > 1 && backend != BackendChoice::Cpu {
            return Err(Failure(
                EXIT_BAD_INPUT,
                "--workers splits the domain between CPU workers: use it with --backend cpu (GPUs: --devices)".into(),
            ));
        }
        Ok(DeviceRequest { backend, threads: self.threads, workers: self.workers as usize, gpus, writes: true })
    }

    /// The first GPU asked for.
    fn first_gpu(&self) -> usize {
        match (&self.devices, self.gpu) {
            (Some(d), _) => d.split(',').next().and_then(|x| x.trim().parse().ok()).unwrap_or(0),
            (None, g) => g.unwrap_or(0),
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum BenchCases {
    /// 2D and 3D dam breaks.
    All,
    /// configs/dam_break_2d.toml.
    DamBreak2d,
    /// configs/dam_break_3d.toml.
    DamBreak3d,
}

/// A failure with its exit code; the message is one sentence for the user.
struct Failure(u8, String);

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`surge check CASE | head`) would
    // panic; like other command-line tools, end quietly instead.
    #[cfg(unix)]
    // SAFETY: sets the disposition of one signal before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // Under mpirun/srun (with the `mpi` feature) this process is one rank of many: rank 0
    // logs, the others only warn; a panic anywhere stops the whole job (MPI_Abort).
    let cluster = surge_runtime::cluster::init();
    let rank = cluster.rank();
    if cluster.size() > 1 {
        let c = cluster.clone();
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            eprintln!("rank {rank}: internal error, stopping every rank");
            default_hook(info);
            c.abort(101);
        }));
    }
    let _ = CLUSTER.set(cluster.clone());
    let quiet = matches!(cli.command, Command::Run { quiet: true, .. }) || rank > 0;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SURGE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if quiet { "warn" } else { "info" })),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .init();
    let result = match cli.command {
        Command::Run { case, out, common, max_steps, restart, quiet } => {
            cmd_run(&case, out, &common, max_steps, restart, quiet)
        }
        Command::Dump { checkpoint, csv } => cmd_dump(&checkpoint, &csv),
        Command::Check { case, write_particles, fill, slab, common } => {
            cmd_check(&case, write_particles.as_deref(), fill, slab.as_deref(), &common)
        }
        Command::Plot { run, out, reference, average, only } => {
            cmd_plot(&plot::Options { run, out, reference, average, only })
        }
        Command::Info => cmd_info(),
        Command::Bench { cases, steps, json, case, from, develop_to, common } => {
            cmd_bench(cases, steps, json.as_deref(), case.as_deref(), from.as_deref(), develop_to, &common)
        }
    };
    let ranks = cluster.size();
    let who = if ranks > 1 { format!(" (rank {rank} of {ranks})") } else { String::new() };
    match result {
        Ok(()) => {
            cluster.finish();
            ExitCode::SUCCESS
        }
        // Not an error: the run stopped as asked (every rank agreed) and can go on.
        Err(Failure(EXIT_INTERRUPTED, msg)) => {
            if rank == 0 {
                eprintln!("interrupted: {msg}");
            }
            cluster.finish();
            ExitCode::from(EXIT_INTERRUPTED)
        }
        Err(Failure(code, msg)) => {
            eprintln!("error{who}: {msg}");
            if ranks > 1 {
                // The other ranks may be waiting on this one: stop them all. Rank 0 has
                // written the summary already; the others leave it a moment to.
                if rank > 0 {
                    std::thread::sleep(std::time::Duration::from_secs(2));
                }
                cluster.abort(code as i32);
            }
            ExitCode::from(code)
        }
    }
}

/// The ranks of this process, for the commands that run devices.
static CLUSTER: std::sync::OnceLock<std::sync::Arc<dyn surge_runtime::cluster::Cluster>> = std::sync::OnceLock::new();

fn cluster() -> std::sync::Arc<dyn surge_runtime::cluster::Cluster> {
    CLUSTER.get().cloned().unwrap_or_else(|| std::sync::Arc::new(surge_runtime::cluster::Single))
}

/// Each fluid region, wall and obstacle in fill order: its name in the case (`wall[2]`), its
/// shape and its particle count.
fn objects(case: &Case, counts: &surge_core::geometry::Counts) -> Vec<(String, &'static str, u64)> {
    let kind = |s: &Option<std::sync::Arc<surge_core::shape::Shape>>| s.as_deref().map_or("box", |s| s.kind);
    let fluid = surge_core::geometry::fluid_counts(case);
    let mut out: Vec<(String, &'static str, u64)> =
        fluid.iter().enumerate().map(|(k, n)| (format!("fluid[{k}]"), kind(&case.fluid_shapes[k]), *n)).collect();
    out.extend(counts.walls.iter().enumerate().map(|(k, n)| (format!("wall[{k}]"), kind(&case.walls[k].shape), *n)));
    out.extend(
        counts.obstacles.iter().enumerate().map(|(k, n)| (case.obstacle_label(k), kind(&case.obstacle_shapes[k]), *n)),
    );
    // The inlets' particles come last, layer by layer across every inlet: one object.
    let inlets: Vec<_> = case.open.iter().filter(|z| z.inlet).collect();
    if !inlets.is_empty() {
        let name = if inlets.len() == 1 { inlets[0].name.clone() } else { "inlets".to_string() };
        out.push((name, "buffer", counts.open));
    }
    out
}

/// Reads and checks the case (counting its shapes' particles) on the global rayon pool, which
/// `--threads` sizes; the CPU backend runs on a pool of its own.
fn load(path: &Path, common: &Common) -> Result<Case, Failure> {
    if common.threads > 0 {
        // Once a process: a second call (the pool exists) changes nothing.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(common.threads).build_global();
    }
    Case::from_file(path, &common.set).map_err(|e| Failure(EXIT_BAD_INPUT, e.to_string()))
}

fn cmd_check(
    path: &Path,
    write_particles: Option<&Path>,
    fill: bool,
    slab: Option<&str>,
    common: &Common,
) -> Result<(), Failure> {
    let t0 = std::time::Instant::now();
    let case = load(path, common)?;
    let checked_s = t0.elapsed().as_secs_f64();
    let grid =
        Grid::new(&case, case.split_axis()).map_err(|e| Failure(EXIT_BAD_INPUT, format!("{}: {e}", path.display())))?;
    // Counted, not built: a case too large for this host is refused below, not killed.
    let counts = surge_core::geometry::counts(&case);
    let (n, fluid) = (counts.total() as usize, counts.fluid as usize);
    let set = BufferSet::for_case(&case);
    let cpu_bpp = surge_cpu::bytes_per_particle(set, n, grid.cell_count())
        + surge_cpu::list_bytes_per_particle(&case, &grid, fluid as u64, n as u64);
    let gpu_bpp = surge_cuda::bytes_per_particle(&case, n)
        .map_err(|e| Failure(EXIT_BAD_INPUT, format!("{}: {e}", path.display())))?;
    // What a GPU holds where two bins a cell do not fit its memory.
    let gpu_compact = surge_cuda::bytes_per_particle_with(&case, n, Some(1))
        .map_err(|e| Failure(EXIT_BAD_INPUT, format!("{}: {e}", path.display())))?;
    let wall = match case.viscosity_boundary_factor {
        f if f != 1.0 => format!(", x {f} with boundary particles"),
        _ => String::new(),
    };
    let visc = match case.viscosity {
        Viscosity::Artificial { alpha } => format!("artificial (alpha {alpha}{wall})"),
        Viscosity::Laminar { nu } => format!("laminar (nu {nu} m²/s{wall})"),
    };
    let diff = match case.diffusion {
        Diffusion::None => "none".to_string(),
        Diffusion::MolteniColagrossi { delta } => format!("molteni_colagrossi (delta {delta})"),
        Diffusion::Fourtakas { delta } => format!("fourtakas (delta {delta})"),
    };
    let dt0 = case.initial_dt();
    println!("case        {} ({}), {}D", case.name, path.display(), case.dim);
    if counts.open > 0 {
        println!(
            "particles   {n} (fluid {fluid}, boundary {}, inlet buffers {})",
            n - fluid - counts.open as usize,
            counts.open
        );
    } else {
        println!("particles   {n} (fluid {fluid}, boundary {})", n - fluid);
    }
    let objects = objects(&case, &counts);
    for (name, kind, count) in &objects {
        println!("            {name:<12} {kind:<9} {count}");
    }
    if case.fluid_shapes.iter().chain(&case.obstacle_shapes).any(Option::is_some)
        || case.walls.iter().any(|w| w.shape.is_some())
    {
        println!(
            "            (shapes read, checked and counted in {checked_s:.2} s on {} threads)",
            rayon::current_num_threads()
        );
    }
    println!(
        "dp, h       {} m, {:.6} m (h/dp {:.3}, {:?} kernel, support {:.6} m)",
        case.dp,
        case.h,
        case.h / case.dp,
        case.kernel,
        2.0 * case.h
    );
    println!("c0          {:.4} m/s (Tait gamma {}, rho0 {} kg/m³): {}", case.c0, case.gamma, case.rho0, case.c0_note);
    if case.expected_speed > 0.0 {
        let ratio = case.c0 / case.expected_speed;
        println!(
            "            {ratio:.1} x the fastest flow to expect, {:.3} m/s{}",
            case.expected_speed,
            if ratio < 10.0 { " (below the usual 10 x: density may vary more than 1 %)" } else { "" }
        );
    }
    let slip = |slip: surge_core::case::Slip| match slip {
        surge_core::case::Slip::No => "no-slip",
        surge_core::case::Slip::Free => "free slip",
        surge_core::case::Slip::Wall => "the wall's velocity",
    };
    let walls = match case.boundary {
        surge_core::case::Boundary::Dbc => "dynamic (dbc)".to_string(),
        surge_core::case::Boundary::Mdbc { slip: s } => {
            let other: Vec<String> = case.mdbc_other_slip.iter().map(|(solid, _)| case.solid_label(*solid)).collect();
            let other =
                if other.is_empty() { String::new() } else { format!("; {} on {}", slip(s.other()), other.join(", ")) };
            format!("mdbc ({}{other})", slip(s))
        }
    };
    let walls = match case.wall_function {
        surge_core::case::WallFunction::None => walls,
        surge_core::case::WallFunction::LogLaw { nu } => {
            format!("{walls} with the smooth-wall log law (nu {nu:e} m²/s)")
        }
    };
    let shift = match case.shifting {
        surge_core::case::Shifting::None => String::new(),
        surge_core::case::Shifting::Lind { coefficient, surface_threshold } => {
            format!(", Lind shifting (A {coefficient}, off where div r < {surface_threshold})")
        }
    };
    println!(
        "physics     viscosity {visc}, density diffusion {diff}, {:?} time stepping, {walls} walls{shift}",
        case.scheme
    );
    let [lo, hi] = case.density_range;
    let fate = match case.on_exit {
        surge_core::config::OnExit::Remove => {
            format!("removed (the run stops past {} % of the fluid)", 100.0 * case.max_removed)
        }
        surge_core::config::OnExit::Stop => "stops the run".to_string(),
    };
    println!("removal     fluid leaving the domain or its density range [{lo}, {hi}] rho0: {fate}");
    for m in &case.motions {
        let solid = case.solid_label(m.solid);
        let laws: Vec<&str> = m.laws.iter().map(surge_core::motion::Law::name).collect();
        println!("motion      {solid}: {}, top speed {:.4} m/s", laws.join(" then "), m.max_speed());
    }
    let frames = surge_core::geometry::body_frames(&case);
    for (b, f) in case.bodies.iter().zip(&frames) {
        let fixed: Vec<&str> = ["x", "y", "z", "rx", "ry", "rz"]
            .iter()
            .zip(f.free)
            .filter(|&(n, free)| !free && (case.dim == 3 || matches!(*n, "x" | "y" | "rz")))
            .map(|(n, _)| *n)
            .collect();
        let c = &f.centre0[..case.dim];
        let i = f.inertia0;
        let inertia = if case.dim == 3 {
            format!("[{:.4e}, {:.4e}, {:.4e}] (diagonal)", i[0][0], i[1][1], i[2][2])
        } else {
            format!("{:.4e} (about z)", i[2][2])
        };
        let unit = if case.dim == 3 { "kg" } else { "kg/m" };
        println!(
            "body        {}: {} particles, mass {:.6} {unit}, centre of mass {c:?}, inertia {inertia}{}",
            b.name,
            f.ids.len(),
            f.mass,
            if fixed.is_empty() { String::new() } else { format!(", fixed {}", fixed.join(" ")) }
        );
        if let Some(h) = f.hinge {
            println!("            hinge through {:?} along {:?}", &h.point[..case.dim], h.axis);
        }
        for m in &f.moorings {
            println!(
                "            mooring from {:?}, stiffness {} N/m, length {:.4} m",
                &m.anchor[..case.dim],
                m.stiffness,
                m.length
            );
        }
    }
    for z in &case.open {
        let kind = if z.inlet { "inlet" } else { "outlet" };
        let velocity = match &z.velocity {
            surge_core::open::OpenVelocity::Extrapolated => "velocity extrapolated".to_string(),
            surge_core::open::OpenVelocity::Prescribed(s) if s.len() == 1 => {
                format!("mean speed {} m/s ({:?})", s[0][1], z.profile)
            }
            surge_core::open::OpenVelocity::Prescribed(s) => {
                format!("mean speed from {} points of time ({:?})", s.len(), z.profile)
            }
        };
        let pressure = match z.pressure {
            surge_core::open::OpenPressure::Extrapolated => "pressure extrapolated".to_string(),
            surge_core::open::OpenPressure::Fixed(p) => format!("pressure {p} Pa"),
            surge_core::open::OpenPressure::Hydrostatic(l) => format!("hydrostatic pressure below {l} m"),
        };
        let columns = if z.inlet { format!(", {} columns", z.columns(case.dim, case.dp).len()) } else { String::new() };
        println!(
            "{kind:<12}{}: plane {} = {} m, flow {}{}, {} layers{columns}; {velocity}, {pressure}",
            z.name,
            ["x", "y", "z"][z.axis],
            z.plane,
            if z.sign > 0.0 { "+" } else { "-" },
            ["x", "y", "z"][z.axis],
            z.layers
        );
    }
    for z in &case.damping {
        println!(
            "damping     along {} from {} to {} m, strength {} /s",
            ["x", "y", "z"][z.axis],
            z.start,
            z.end,
            z.strength
        );
    }
    println!(
        "grid        {:?} cells of {:.6} m on cpu, split along {}",
        &grid.n[..case.dim],
        grid.cell[0],
        ["x", "y", "z"][case.split_axis()]
    );
    // The GPU's own grid: finer cells, a thinner skin (surge_cuda::grid_for); the kernels
    // below compile on it.
    let gpu_grid = surge_cuda::grid_for(&case);
    if let Ok(g) = &gpu_grid {
        println!(
            "            {:?} cells of {:.6} m on a GPU (a skin of {:.1} % of the support, a stencil {} cells wide)",
            &g.n[..case.dim],
            g.cell[0],
            100.0 * g.skin / g.support,
            2 * g.reach + 1
        );
    }
    println!(
        "first dt    {dt0:.4e} s (CFL {}), about {:.0} steps to t = {} s at that dt",
        case.cfl,
        case.end_time / dt0,
        case.end_time
    );
    println!(
        "memory      {:.1} MB on cpu ({cpu_bpp} bytes/particle), {:.1} MB on a GPU ({gpu_bpp} bytes/particle{})",
        (cpu_bpp * n) as f64 / 1e6,
        (gpu_bpp * n) as f64 / 1e6,
        if gpu_compact < gpu_bpp {
            format!("; {gpu_compact} with one bin a cell, which a GPU takes where two do not fit")
        } else {
            String::new()
        }
    );
    let gpu = match common.backend {
        BackendArg::Cpu => false,
        BackendArg::Cuda => true,
        BackendArg::Auto => surge_cuda::gpus().is_ok_and(|g| !g.is_empty()),
    };
    let devices = match common.request()?.gpus {
        Gpus::List(l) if gpu => l.len(),
        _ if gpu => 1,
        _ => common.workers as usize,
    };
    let bad = |e: String| Failure(EXIT_BAD_INPUT, format!("{}: {e}", path.display()));
    let host = surge_runtime::memory::host_memory(&case, gpu, devices, 1.0, true).map_err(bad)?;
    println!(
        "host memory {:.2} GB needed to build and run it on {}, {}",
        host.needed as f64 / 1e9,
        if gpu { "a GPU" } else { "the CPU" },
        host.available.map_or("available memory unknown".into(), |a| format!("{:.2} GB available", a as f64 / 1e9))
    );
    if let Some(line) = surge_runtime::memory::refusal(&host, &case, gpu, devices, 1.0, true) {
        return Err(bad(line));
    }
    if gpu && devices > 1 && case.divisible() {
        // Each device of a GPU team: its share of the first cut and what it allocates for it
        // (its headroom and its window's cell table), as the run's log and bench report it.
        let grid = surge_cuda::grid_for(&case).map_err(bad)?;
        let (census, map) = surge_runtime::census_cut(&case, &grid, devices).map_err(bad)?;
        for d in 0..devices {
            let (n, layer) = surge_runtime::gpu_share(&census, &map, d);
            let bpp = surge_cuda::team_bytes_per_particle(&case, &grid, n, census.total, layer, &map, d);
            println!(
                "device {d}    {n} particles (cell layers {:?} along {}), {:.1} MB on its GPU ({bpp} bytes/particle)",
                map.owned(d),
                ["x", "y", "z"][grid.split_axis()],
                (bpp * n) as f64 / 1e6
            );
        }
    }
    if let (true, None, Some(slab)) = (fill, write_particles, slab) {
        let (r, n) = slab
            .split_once('/')
            .and_then(|(r, n)| Some((r.trim().parse::<usize>().ok()?, n.trim().parse::<usize>().ok()?)))
            .filter(|&(r, n)| r < n)
            .ok_or_else(|| bad(format!("--slab {slab}: expected R/N with 0 <= R < N (rank R of N ranks)")))?;
        let grid = surge_core::grid::Grid::new(&case, case.split_axis()).map_err(bad)?;
        let axis = grid.split_axis();
        let t0 = std::time::Instant::now();
        let (census, map) = surge_runtime::census_cut(&case, &grid, n).map_err(bad)?;
        let census_s = t0.elapsed().as_secs_f64();
        let (lo, hi) = map.owned(r);
        let t1 = std::time::Instant::now();
        let filled = surge_runtime::fill_layers(&case, &grid, &census, lo..hi);
        println!(
            "particles   {} of {} filled in {:.2} s (rank {r} of {n}: cell layers {lo}..{hi} of {} along {}) after a \
             census in {:.2} s, on {} threads",
            filled.len(),
            census.total,
            t1.elapsed().as_secs_f64(),
            grid.layers(),
            ["x", "y", "z"][axis],
            census_s,
            rayon::current_num_threads()
        );
    } else if fill && write_particles.is_none() {
        let t0 = std::time::Instant::now();
        let filled = surge_core::geometry::fill(&case);
        println!(
            "particles   {} filled in {:.2} s on {} threads (read, checked and counted before in {:.2} s)",
            filled.len(),
            t0.elapsed().as_secs_f64(),
            rayon::current_num_threads(),
            checked_s
        );
    }
    if let Some(dir) = write_particles {
        let t0 = std::time::Instant::now();
        let filled = surge_core::geometry::fill(&case);
        let fill_s = t0.elapsed().as_secs_f64();
        let object: Vec<u32> =
            objects.iter().enumerate().flat_map(|(k, (_, _, n))| std::iter::repeat_n(k as u32, *n as usize)).collect();
        let out = dir.join(format!("{}_particles.vtu", case.name));
        std::fs::create_dir_all(dir)
            .and_then(|_| surge_io::write_filled(&out, &filled, &object))
            .map_err(|e| Failure(EXIT_RUN_FAILED, format!("cannot write {}: {e}", out.display())))?;
        println!(
            "particles   written to {} (filled in {fill_s:.2} s on {} threads)",
            out.display(),
            rayon::current_num_threads()
        );
    }
    // The kernels need NVRTC but no GPU: a case can be checked on a login node.
    if common.backend != BackendArg::Cpu {
        match surge_cuda::nvrtc_version() {
            Ok(_) => {
                let arch = match surge_cuda::gpus() {
                    Ok(g) if common.first_gpu() < g.len() => {
                        surge_cuda::compile::arch_for(g[common.first_gpu()].compute_capability)
                    }
                    _ => "compute_80",
                };
                let t0 = std::time::Instant::now();
                // On the GPU's grid (finer than the CPU's), as a run compiles them: the cache
                // then serves the run.
                let gpu_grid =
                    gpu_grid.as_ref().map_err(|e| Failure(EXIT_BAD_INPUT, format!("{}: {e}", path.display())))?;
                let c = surge_cuda::compile::compile(&surge_cuda::compile::defines(&case, gpu_grid, n as u64), arch)
                    .map_err(|e| Failure(EXIT_RUN_FAILED, e))?;
                println!(
                    "kernels     {} for {arch} in {:.2} s; neighbour traversal {}",
                    if c.cached { "loaded from the cache" } else { "compiled with NVRTC" },
                    t0.elapsed().as_secs_f64(),
                    surge_cuda::compile::traversal_note(&case, gpu_grid)
                );
            }
            Err(e) if common.backend == BackendArg::Cuda => {
                return Err(Failure(EXIT_BAD_INPUT, format!("--backend cuda: {e}")))
            }
            Err(e) => println!("kernels     not compiled: {e}"),
        }
    }
    println!(
        "output      every {} s (frames), every {} s (gauges: {})",
        case.output_interval,
        case.gauge_interval,
        case.gauges.len()
    );
    println!("ok");
    Ok(())
}

fn cmd_run(
    path: &Path,
    out: Option<PathBuf>,
    common: &Common,
    max_steps: Option<u64>,
    restart: Option<surge_runtime::RestartFrom>,
    quiet: bool,
) -> Result<(), Failure> {
    // First, so that a signal during set-up is not lost: it stops the run at its first step.
    let stop = stop_on_signals()?;
    let case = load(path, common)?;
    let out_dir = out.unwrap_or_else(|| surge_runtime::default_out_dir(&case));
    let loaded = surge_runtime::simulation_on(&case, &common.request()?, cluster())
        .map_err(|e| Failure(EXIT_BAD_INPUT, format!("{}: {e}", path.display())))?;
    let threads = loaded.threads as u32;
    tracing::info!(
        "{}: {} particles ({} fluid), dp {} m, h {:.5} m, c0 {:.3} m/s, end {} s",
        case.name,
        loaded.sim.particles(),
        loaded.fluid,
        case.dp,
        case.h,
        case.c0,
        case.end_time
    );
    tracing::info!("{}", loaded.note);
    tracing::info!("output: {}", out_dir.display());
    let opts = RunOptions {
        max_steps,
        progress_every: Duration::from_millis(250),
        stop,
        restart,
        ..RunOptions::new(out_dir.clone())
    };
    let mut obs = Reporter::new(quiet, case.end_time);
    let result = surge_runtime::run(&case, loaded.sim, threads, &opts, &mut obs);
    obs.finish();
    match result {
        Ok(s) if s.status == surge_io::Summary::INTERRUPTED => {
            Err(Failure(EXIT_INTERRUPTED, s.message.unwrap_or_default()))
        }
        Ok(s) => {
            // Of the fluid removed, what this run took out for its density (summary.json per
            // device); the rest left the domain, or went before a restart.
            let dense: u64 = s.devices.iter().map(|d| d.removed_for_density).sum();
            let removed = match s.removed_particles {
                0 => String::new(),
                n => format!("; {n} fluid particles removed ({dense} of this run's for their density)"),
            };
            tracing::info!(
                "done: {} steps to t = {:.6} s in {:.2} s wall; this run {:.3} ms/step, {:.3e} \
                 particle-steps/s, {:.1} % of it in rebuilds{removed}; summary in {}",
                s.steps,
                s.sim_time,
                s.wall_seconds,
                s.ms_per_step,
                s.particle_steps_per_second,
                100.0 * s.rebuild_share,
                out_dir.join("summary.json").display()
            );
            Ok(())
        }
        Err((e @ surge_runtime::RunError::Restart(_), _)) => Err(Failure(EXIT_BAD_INPUT, e.to_string())),
        Err((e, _)) => Err(Failure(EXIT_RUN_FAILED, e.to_string())),
    }
}

/// SIGTERM (sent by schedulers at the time limit, and by `kill`) and SIGUSR1 (Slurm's
/// `--signal=B:USR1@120`) set the returned flag instead of killing the process: the run
/// writes a checkpoint at the end of the current step and exits with EXIT_INTERRUPTED.
fn stop_on_signals() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, Failure> {
    use signal_hook::consts::{SIGTERM, SIGUSR1};
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [SIGTERM, SIGUSR1] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))
            .map_err(|e| Failure(EXIT_RUN_FAILED, format!("cannot install the handler of signal {sig}: {e}")))?;
    }
    Ok(stop)
}

fn cmd_dump(checkpoint: &Path, csv: &Path) -> Result<(), Failure> {
    let c = surge_io::checkpoint::load(checkpoint, None).map_err(|e| Failure(EXIT_BAD_INPUT, e.to_string()))?;
    c.write_csv(csv).map_err(|e| Failure(EXIT_RUN_FAILED, e.to_string()))?;
    tracing::info!(
        "{}: {} particles of `{}` at t = {} s (step {}) written to {}",
        checkpoint.display(),
        c.particles.len(),
        c.header.case_name,
        c.header.time,
        c.header.step,
        csv.display()
    );
    Ok(())
}

fn cmd_plot(o: &plot::Options) -> Result<(), Failure> {
    let report = plot::plot(o).map_err(|e| match e {
        plot::PlotError::Input(m) => Failure(EXIT_BAD_INPUT, m),
        plot::PlotError::Output(m) => Failure(EXIT_RUN_FAILED, m),
    })?;
    let refs = report.reference.len();
    let avg = o.average.map(|w| format!(" ({} ms average)", w * 1e3)).unwrap_or_default();
    println!(
        "largest value of each gauge{avg} and its time [s]{}",
        match refs {
            0 => "",
            1 => "; the reference's in the run's time span",
            _ => "; each reference's in the run's time span",
        }
    );
    if refs > 1 {
        for (k, (label, _)) in report.reference.iter().enumerate() {
            println!("reference {}: {label}", k + 1);
        }
    }
    let fmt = |p: Option<plot::Peak>| match p {
        Some(p) => format!("{:>12} {:>9.4}", plot::fmt_value(p.value), p.time),
        None => format!("{:>12} {:>9}", "-", "-"),
    };
    let heads: String = (1..=refs)
        .map(|k| {
            format!(" {:>12} {:>9}", if refs == 1 { "reference".to_string() } else { format!("reference {k}") }, "at t")
        })
        .collect();
    println!("{:<12} {:>12} {:>9}{heads}", "gauge", "peak", "at t");
    for (name, run, reference) in &report.peaks {
        let r: String = reference.iter().map(|p| format!(" {}", fmt(*p))).collect();
        println!("{name:<12} {}{r}", fmt(*run));
    }
    for (label, unmatched) in &report.reference {
        if !unmatched.is_empty() {
            println!("reference `{label}`: no gauge for its columns {}", unmatched.join(", "));
        }
    }
    println!("{} plot(s) in {}", report.files.len(), report.out.display());
    Ok(())
}

/// Progress bar on a terminal; a log line every 10 s otherwise, with the step's cost since
/// the line before (a step costs more as a flow develops: the run's average hides it).
struct Reporter {
    bar: Option<ProgressBar>,
    quiet: bool,
    last_log: f64,
    /// The step of the last log line (None before the first).
    last_step: Option<u64>,
}

impl Reporter {
    fn new(quiet: bool, end: f64) -> Reporter {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(1000);
            b.set_style(ProgressStyle::with_template("{bar:40.cyan/blue} {msg} ETA {eta}").expect("valid template"));
            b.set_message(format!("t = 0 / {end} s"));
            b
        });
        Reporter { bar, quiet, last_log: 0.0, last_step: None }
    }
    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Reporter {
    fn progress(&mut self, p: &Progress) {
        let line = format!(
            "t = {:.5} / {} s, step {}, dt {:.3e} s, {:.1} steps/s",
            p.time, p.end, p.step, p.dt, p.steps_per_second
        );
        let removed = if p.removed > 0 { format!(", {} fluid particles removed", p.removed) } else { String::new() };
        if let Some(b) = &self.bar {
            b.set_position((1000.0 * p.time / p.end) as u64);
            b.set_message(format!("{line}{removed}"));
        } else if !self.quiet && (p.wall - self.last_log >= 10.0 || p.time >= p.end) {
            // ms/step since the last line (since the start for the first).
            let lately = match self.last_step {
                Some(s) if p.step > s => 1e3 * (p.wall - self.last_log) / (p.step - s) as f64,
                None if p.steps_per_second > 0.0 => 1e3 / p.steps_per_second,
                _ => f64::NAN,
            };
            self.last_log = p.wall;
            self.last_step = Some(p.step);
            let eta = if p.time > 0.0 { p.wall * (p.end - p.time) / p.time } else { f64::NAN };
            tracing::info!("{line}, {lately:.2} ms/step since the last line{removed}, ETA {eta:.0} s");
        }
    }
    fn frame(&mut self, index: u32, time: f64, _files: &[PathBuf]) {
        if self.bar.is_none() && !self.quiet {
            tracing::debug!("frame {index} at t = {time:.5} s");
        }
    }
}

const BENCH_2D: &str = include_str!("../configs/dam_break_2d.toml");
const BENCH_3D: &str = include_str!("../configs/dam_break_3d.toml");
/// When `surge bench` times the built-in cases by default, as a share of the case's end
/// time: the middle of the run. A step's cost grows as the flow develops (SPHERIC Test 2 at
/// dp 0.006 on an H100: 7.0 ms near rest, 7.2 at t = 0.3 s, 8.4 near its end at 1.5 s), and
/// the middle's is the whole run's average (docs/PERFORMANCE.md, "The whole run against
/// the bench").
const BENCH_DEVELOPED_SHARE: f64 = 0.5;

fn cmd_bench(
    cases: BenchCases,
    steps: u64,
    json: Option<&Path>,
    case_file: Option<&Path>,
    from: Option<&Path>,
    develop_to: Option<f64>,
    common: &Common,
) -> Result<(), Failure> {
    let bad = |e: String| Failure(EXIT_BAD_INPUT, e);
    if from.is_some() && develop_to.is_some() {
        return Err(bad("--from and --develop-to: the timed steps start from one or the other".into()));
    }
    if let Some(t) = develop_to.filter(|t| !(t.is_finite() && *t >= 0.0)) {
        return Err(bad(format!("--develop-to {t}: expected a time >= 0 (s)")));
    }
    let list: Vec<Case> = match case_file {
        Some(path) => vec![load(path, common)?],
        None => {
            let builtin: Vec<(&str, &str)> = match cases {
                BenchCases::All => vec![("dam_break_2d", BENCH_2D), ("dam_break_3d", BENCH_3D)],
                BenchCases::DamBreak2d => vec![("dam_break_2d", BENCH_2D)],
                BenchCases::DamBreak3d => vec![("dam_break_3d", BENCH_3D)],
            };
            let parse = |(name, text): (&str, &str)| {
                let raw = surge_core::config::parse_case_file(text, name, &common.set).map_err(|e| e.to_string())?;
                Case::from_raw(raw, name, name).map_err(|e| e.to_string())
            };
            builtin.into_iter().map(parse).collect::<Result<_, _>>().map_err(bad)?
        }
    };
    // The developed flow's time: the built-in cases' default the middle of the run, 0 for a
    // case file.
    let develop_to = |case: &Case| {
        develop_to.unwrap_or(if case_file.is_some() || from.is_some() {
            0.0
        } else {
            BENCH_DEVELOPED_SHARE * case.end_time
        })
    };
    if let Some((case, t)) = list.iter().map(|c| (c, develop_to(c))).find(|(c, t)| *t > 0.0 && *t >= c.end_time) {
        return Err(bad(format!("--develop-to {t}: the case {} ends at t = {} s", case.name, case.end_time)));
    }
    if from.is_some() && list.len() != 1 {
        return Err(bad("--from: a checkpoint is of one case: give --case FILE or one of --cases".into()));
    }
    let mut rows = Vec::new();
    for case in &list {
        let develop_to = develop_to(case);
        // The bench writes no frame; a checkpoint only to develop the flow or to start from
        // one: otherwise the host needs no room for the particles' copies.
        let req = DeviceRequest { writes: develop_to > 0.0 || from.is_some(), ..common.request()? };
        let mut loaded = surge_runtime::simulation_on(case, &req, cluster()).map_err(bad)?;
        tracing::info!("{}", loaded.note);
        if let Some(path) = from {
            let from = surge_runtime::RestartFrom::Path(path.to_path_buf());
            let r = surge_runtime::find_restart(Path::new("."), &from, case).map_err(bad)?;
            tracing::info!(
                "timing from {} (t = {} s, step {})",
                path.display(),
                r.checkpoint.header.time,
                r.checkpoint.header.step
            );
            let state = r.step_state();
            loaded.sim.restore(state, r.checkpoint.particles).map_err(|e| bad(format!("{}: {e}", path.display())))?;
        } else if develop_to > 0.0 {
            let cache = surge_runtime::develop_cache(&loaded.sim, develop_to);
            let how = surge_runtime::develop(&mut loaded.sim, develop_to, cache.as_deref())
                .map_err(|e| Failure(EXIT_RUN_FAILED, format!("developing the flow of {}: {e}", case.name)))?;
            tracing::info!("{}: timing the developed flow, {how}", case.name);
        } else {
            tracing::info!("{}: timing the first steps from rest (--develop-to T times the flow at t = T)", case.name);
        }
        rows.push(surge_runtime::bench(loaded.sim, steps).map_err(|e| Failure(EXIT_RUN_FAILED, e.to_string()))?);
    }
    if cluster().rank() == 0 {
        println!("{}", surge_runtime::BenchResult::HEADER);
        for r in &rows {
            println!("{}", r.row());
            for line in r.device_rows() {
                println!("{line}");
            }
        }
        if let Some(path) = json {
            use std::io::Write as _;
            let fail = |e: std::io::Error| Failure(EXIT_RUN_FAILED, format!("{}: {e}", path.display()));
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(fail)?;
            for r in &rows {
                let line = serde_json::to_string(r).map_err(|e| Failure(EXIT_RUN_FAILED, e.to_string()))?;
                writeln!(f, "{line}").map_err(fail)?;
            }
        }
    }
    Ok(())
}

fn cmd_info() -> Result<(), Failure> {
    println!("surge {}", env!("CARGO_PKG_VERSION"));
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("cpu         {threads} hardware threads");
    match surge_cuda::gpus() {
        Ok(gpus) => {
            for g in &gpus {
                println!(
                    "gpu {}       {}, {:.1} GiB, compute capability {}.{}",
                    g.ordinal,
                    g.name,
                    g.memory as f64 / (1u64 << 30) as f64,
                    g.compute_capability.0,
                    g.compute_capability.1
                );
            }
            // Devices of one run exchange GPU to GPU; directly where peer access is possible,
            // else the driver stages the copies through the host.
            for a in 0..gpus.len() {
                for b in a + 1..gpus.len() {
                    let both = surge_cuda::peer_access(a, b).and_then(|ab| Ok(ab && surge_cuda::peer_access(b, a)?));
                    match both {
                        Ok(true) => {
                            println!("peer {a}-{b}    direct access (copies GPU to GPU, CUDA IPC between ranks too)")
                        }
                        Ok(false) => println!("peer {a}-{b}    no direct access (copies staged through the host)"),
                        Err(e) => println!("peer {a}-{b}    unknown: {e}"),
                    }
                }
            }
        }
        Err(e) => println!("cuda        not usable: {e}"),
    }
    match surge_cuda::nvrtc_version() {
        Ok((major, minor)) => println!("nvrtc       {major}.{minor}"),
        Err(e) => println!("nvrtc       not usable: {e}"),
    }
    if surge_runtime::cluster::MPI_BUILT {
        println!("mpi         built in (`mpirun -n N surge run CASE`; MPI_THREAD_MULTIPLE asked for)");
        println!(
            "            ranks of a node exchange GPU to GPU (CUDA IPC) where they reach each other's \
             memory, tried at the first rebuild; SURGE_DEVICE_LINKS=host|process to force host memory"
        );
    } else {
        println!("mpi         not in this build (build with `cargo build --release --features mpi`)");
    }
    Ok(())
}
