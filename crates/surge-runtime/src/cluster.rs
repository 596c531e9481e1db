//! The process's place among MPI ranks: what the devices of different ranks need from MPI
//! (point-to-point bytes between neighbouring devices, the dt and rebuild reductions, the
//! load balancer's times, output gathered to rank 0). Without the `mpi` feature, or run
//! without `mpirun`, the process is rank 0 of 1 ([`Single`]).

use std::sync::Arc;
use surge_core::buffers::OwnedBytes;

/// Tags of point-to-point messages: particles and forces between neighbouring devices
/// travel on one tag per direction (MPI keeps their order); output to rank 0 on its own.
pub mod tag {
    /// From a device to its right neighbour.
    pub const RIGHTWARD: i32 = 1;
    /// From a device to its left neighbour.
    pub const LEFTWARD: i32 = 2;
    /// Reports and other data gathered to rank 0.
    pub const TO_ROOT: i32 = 3;
}

/// The ranks of a run. Collectives are called by one thread per rank, in the same order on
/// every rank; point-to-point calls by any thread.
pub trait Cluster: Send + Sync {
    /// This rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// This rank's number among the ranks of its node, and how many share the node.
    fn node_local(&self) -> (usize, usize);
    /// Host name.
    fn host(&self) -> String;
    /// How MPI calls from several threads are made (for the log).
    fn threading(&self) -> String;
    /// Element-wise maximum over the ranks, in place.
    fn max(&self, v: &mut [f64]);
    /// Element-wise sum over the ranks, in place (exact where only one rank is non-zero).
    fn sum(&self, v: &mut [f64]);
    /// Every rank's `v` (the same length on all), rank after rank.
    fn all_gather(&self, v: &[f64]) -> Vec<f64>;
    /// Every rank's bytes at rank 0 (rank order); `None` on the other ranks.
    fn gather_bytes(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>>;
    /// Send bytes to a rank (returns before the receiver has them).
    fn send(&self, to: usize, tag: i32, bytes: Vec<u8>);
    /// Receive the next bytes from a rank with a tag (blocks).
    fn recv(&self, from: usize, tag: i32) -> Vec<u8>;
    /// Send bytes the message owns (a buffer moved out of its arrays: no copy made).
    fn send_owned(&self, to: usize, tag: i32, bytes: OwnedBytes) {
        self.send(to, tag, bytes.bytes().to_vec());
    }
    /// Receive the next message from a rank with a tag into `buf`, which it must fill
    /// exactly (blocks); an error names both lengths.
    fn recv_into(&self, from: usize, tag: i32, buf: &mut [u8]) -> Result<(), String> {
        let v = self.recv(from, tag);
        if v.len() != buf.len() {
            return Err(format!("a message of {} bytes from rank {from}, expected {}", v.len(), buf.len()));
        }
        buf.copy_from_slice(&v);
        Ok(())
    }
    /// Wait for every rank.
    fn barrier(&self);
    /// Stop the whole job (every rank) with an exit code.
    fn abort(&self, code: i32) -> !;
    /// End MPI cleanly (after the last collective); a no-op without MPI.
    fn finish(&self) {}
}

/// One process, no MPI.
pub struct Single;

impl Cluster for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn node_local(&self) -> (usize, usize) {
        (0, 1)
    }
    fn host(&self) -> String {
        hostname()
    }
    fn threading(&self) -> String {
        "no MPI".into()
    }
    fn max(&self, _: &mut [f64]) {}
    fn sum(&self, _: &mut [f64]) {}
    fn all_gather(&self, v: &[f64]) -> Vec<f64> {
        v.to_vec()
    }
    fn gather_bytes(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        Some(vec![bytes])
    }
    fn send(&self, to: usize, _: i32, _: Vec<u8>) {
        panic!("no rank {to}: this process runs alone");
    }
    fn recv(&self, from: usize, _: i32) -> Vec<u8> {
        panic!("no rank {from}: this process runs alone");
    }
    fn barrier(&self) {}
    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// The host's name (for the rank map).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "localhost".into())
}

/// The cluster of this process: MPI when built with the `mpi` feature and started by
/// `mpirun`/`srun` with more than one rank, else [`Single`]. Call once, early.
pub fn init() -> Arc<dyn Cluster> {
    #[cfg(feature = "mpi")]
    {
        if launched_by_mpi() {
            return mpi_cluster::Mpi::init();
        }
    }
    Arc::new(Single)
}

/// True when a launcher (Open MPI, MPICH/Hydra, Slurm) started this process as a rank.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"].iter().any(|v| std::env::var_os(v).is_some())
        || (std::env::var_os("SLURM_STEP_ID").is_some() && std::env::var_os("SLURM_NTASKS").is_some())
}

/// Whether this build has MPI.
pub const MPI_BUILT: bool = cfg!(feature = "mpi");

#[cfg(feature = "mpi")]
pub mod mpi_cluster {
    //! [`Cluster`] over MPI (rsmpi). Threads: with `MPI_THREAD_MULTIPLE` every worker
    //! thread calls MPI directly; otherwise every call is funnelled through one lock per
    //! rank, and waits poll (probe / test) with the lock released, so no thread blocks
    //! inside MPI while another needs it.

    use super::Cluster;
    use mpi::collective::SystemOperation;
    use mpi::point_to_point::{MatchedReceiveVec, Message, Status};
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;
    use mpi::Threading;
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use surge_core::buffers::OwnedBytes;

    type Outgoing = (usize, i32, OwnedBytes);

    fn lock_ignoring_poison(l: &Mutex<()>) -> std::sync::MutexGuard<'_, ()> {
        l.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// MPI ranks.
    pub struct Mpi {
        /// Dropped (MPI_Finalize) by [`Cluster::finish`].
        universe: Mutex<Option<mpi::environment::Universe>>,
        world: SimpleCommunicator,
        node: (usize, usize),
        threading: Threading,
        /// Held around every MPI call unless the library is fully thread-safe.
        lock: Option<Arc<Mutex<()>>>,
        /// Sends go through a thread per destination rank, so a device never waits for its
        /// neighbour to receive before it can receive itself (large messages are not
        /// buffered by MPI), and one slow receiver holds up no other.
        senders: Mutex<Vec<(usize, Sender<Outgoing>, JoinHandle<()>)>>,
    }

    // SAFETY: MPI handles are plain handles; concurrent use is what MPI_THREAD_MULTIPLE
    // allows, and without it every call holds `lock`.
    unsafe impl Send for Mpi {}
    unsafe impl Sync for Mpi {}

    impl Mpi {
        /// Initialise MPI, asking for MPI_THREAD_MULTIPLE.
        pub fn init() -> Arc<dyn Cluster> {
            let (universe, threading) =
                mpi::initialize_with_threading(Threading::Multiple).expect("MPI is initialised once");
            let world = universe.world();
            let shared = world.split_shared(world.rank());
            let mut node = (shared.rank() as usize, shared.size() as usize);
            if node.1 == 0 {
                let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
                node = (
                    var("OMPI_COMM_WORLD_LOCAL_RANK").or(var("SLURM_LOCALID")).unwrap_or(0),
                    var("OMPI_COMM_WORLD_LOCAL_SIZE").or(var("SLURM_NTASKS_PER_NODE")).unwrap_or(1),
                );
            }
            let lock = (threading != Threading::Multiple).then(|| Arc::new(Mutex::new(())));
            Arc::new(Mpi {
                universe: Mutex::new(Some(universe)),
                world,
                node,
                threading,
                lock,
                senders: Mutex::new(Vec::new()),
            })
        }

        /// The sending thread for rank `to`, started on first use: one per destination, so
        /// a large message waiting for one neighbour to receive never holds up another.
        fn sender(&self, to: usize) -> Sender<Outgoing> {
            let mut senders = self.senders.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, tx, _)) = senders.iter().find(|(r, _, _)| *r == to) {
                return tx.clone();
            }
            let (tx, rx) = channel::<Outgoing>();
            let lock = self.lock.clone();
            let thread = std::thread::Builder::new()
                .name(format!("surge-mpi-send-{to}"))
                .spawn(move || {
                    let world = SimpleCommunicator::world();
                    let p = world.process_at_rank(to as i32);
                    for (_, tag, bytes) in rx {
                        let bytes = bytes.bytes();
                        match &lock {
                            None => p.send_with_tag(bytes, tag),
                            Some(l) => mpi::request::scope(|s| {
                                let mut req = {
                                    let _g = lock_ignoring_poison(l);
                                    p.immediate_send_with_tag(s, bytes, tag)
                                };
                                loop {
                                    let r = {
                                        let _g = lock_ignoring_poison(l);
                                        req.test()
                                    };
                                    match r {
                                        Ok(_) => break,
                                        Err(r) => req = r,
                                    }
                                    std::thread::yield_now();
                                }
                            }),
                        }
                    }
                })
                .expect("an MPI send thread starts");
            senders.push((to, tx.clone(), thread));
            tx
        }

        fn locked<T>(&self, f: impl FnOnce() -> T) -> T {
            let _g = self.lock.as_ref().map(|l| l.lock().unwrap_or_else(|p| p.into_inner()));
            f()
        }

        /// The next message from `from` with `tag`, matched (blocks). Under the lock it
        /// polls, releasing the lock between tries so the other threads' calls go on.
        fn probe(&self, from: usize, tag: i32) -> (Message, Status) {
            let p = self.world.process_at_rank(from as i32);
            loop {
                if self.lock.is_none() {
                    return p.matched_probe_with_tag(tag);
                }
                if let Some(got) = self.locked(|| p.immediate_matched_probe_with_tag(tag)) {
                    return got;
                }
                std::thread::yield_now();
            }
        }
    }

    impl Cluster for Mpi {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }
        fn size(&self) -> usize {
            self.world.size() as usize
        }
        fn node_local(&self) -> (usize, usize) {
            self.node
        }
        fn host(&self) -> String {
            mpi::environment::processor_name().unwrap_or_else(|_| super::hostname())
        }
        fn threading(&self) -> String {
            match self.threading {
                Threading::Multiple => "MPI_THREAD_MULTIPLE: worker threads call MPI directly".into(),
                t => format!("{t:?} granted (not MPI_THREAD_MULTIPLE): MPI calls funnelled through one lock per rank"),
            }
        }
        fn max(&self, v: &mut [f64]) {
            let send = v.to_vec();
            self.locked(|| self.world.all_reduce_into(&send[..], v, SystemOperation::max()));
        }
        fn sum(&self, v: &mut [f64]) {
            let send = v.to_vec();
            self.locked(|| self.world.all_reduce_into(&send[..], v, SystemOperation::sum()));
        }
        fn all_gather(&self, v: &[f64]) -> Vec<f64> {
            let mut out = vec![0.0; v.len() * self.size()];
            self.locked(|| self.world.all_gather_into(v, &mut out[..]));
            out
        }
        fn gather_bytes(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
            if self.rank() == 0 {
                let mut all = vec![bytes];
                for r in 1..self.size() {
                    all.push(self.recv(r, super::tag::TO_ROOT));
                }
                Some(all)
            } else {
                self.send(0, super::tag::TO_ROOT, bytes);
                None
            }
        }
        fn send(&self, to: usize, tag: i32, bytes: Vec<u8>) {
            let _ = self.sender(to).send((to, tag, bytes.into()));
        }
        fn send_owned(&self, to: usize, tag: i32, bytes: OwnedBytes) {
            let _ = self.sender(to).send((to, tag, bytes));
        }
        fn recv_into(&self, from: usize, tag: i32, buf: &mut [u8]) -> Result<(), String> {
            // Matched, so the length is checked before the receive (no truncation error).
            let (m, status) = self.probe(from, tag);
            let n = status.count(u8::equivalent_datatype()) as usize;
            if n != buf.len() {
                // Take it anyway (into a scratch vector), so the stream of messages stays in step.
                let _ = self.locked(|| (m, status).matched_receive_vec::<u8>());
                return Err(format!("a message of {n} bytes from rank {from}, expected {}", buf.len()));
            }
            self.locked(|| m.matched_receive_into(buf));
            Ok(())
        }
        fn recv(&self, from: usize, tag: i32) -> Vec<u8> {
            let got = self.probe(from, tag);
            self.locked(|| got.matched_receive_vec::<u8>().0)
        }
        fn barrier(&self) {
            self.locked(|| self.world.barrier());
        }
        fn abort(&self, code: i32) -> ! {
            self.world.abort(code)
        }
        fn finish(&self) {
            let senders = std::mem::take(&mut *self.senders.lock().unwrap_or_else(|p| p.into_inner()));
            for (_, tx, thread) in senders {
                drop(tx);
                let _ = thread.join();
            }
            self.barrier();
            drop(self.universe.lock().unwrap_or_else(|p| p.into_inner()).take());
        }
    }
}
