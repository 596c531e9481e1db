//! What devices send each other: the one interface a smart worker talks through, whether its
//! neighbours are threads of this process (channels: plain moves of host buffers) or, with
//! MPI, on other ranks.
//!
//! Point-to-point traffic goes to the left and right neighbours only: particles at a
//! rebuild, force values of the edges at each force pass. Collectives (the dt and rebuild
//! reductions, the load balancer's times) involve every device and return the same values
//! on all of them, reduced in device order, so every device takes the same decisions.

use crate::cluster::{tag, Cluster, Single};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use surge_core::backend::DeviceBlock;
use surge_core::buffers::{BufferSet, OwnedBytes, ParticleState};
use surge_core::decomp::Side;

/// A message to a neighbour.
#[derive(Debug)]
pub enum Packet {
    /// Particles at a rebuild: the neighbour's copies and the particles it now owns.
    Particles(ParticleState),
    /// Force values of an edge ([`surge_core::backend::Backend::edge_forces`]).
    Forces(Vec<[f32; 4]>),
    /// Particles or force values left in the sender's device memory, for the receiver's
    /// backend to copy device to device ([`surge_core::backend::Backend::rebuild_begin_peer`],
    /// [`surge_core::backend::Backend::edge_forces_peer`]). Only [`DeviceBlock::Shared`]
    /// crosses to another rank.
    Device(DeviceBlock),
    /// A device's offer of its memory to a neighbour on another rank
    /// ([`surge_core::backend::Backend::share_offer`]); empty when it has none.
    Offer(Vec<u8>),
    /// The sender failed in this stage; the failure is reported at the next reduction.
    Failed,
}

impl Packet {
    /// Short name for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Packet::Particles(_) => "particles",
            Packet::Forces(_) => "forces",
            Packet::Device(_) => "device block",
            Packet::Offer(_) => "memory offer",
            Packet::Failed => "failure notice",
        }
    }
}

/// A device's links to the others.
pub trait Exchange: Send {
    /// This device's global number.
    fn device(&self) -> usize;
    /// Number of devices.
    fn devices(&self) -> usize;
    /// True when the neighbour on `side` is a device of another process (an MPI rank): only
    /// bytes reach it, and a [`DeviceBlock::Local`] may not be sent there. False by default.
    fn remote(&self, _side: Side) -> bool {
        false
    }
    /// Send to the neighbour on `side` (never blocks on the receiver).
    fn send(&mut self, side: Side, p: Packet) -> Result<(), String>;
    /// Receive the next packet from the neighbour on `side` (blocks).
    fn recv(&mut self, side: Side) -> Result<Packet, String>;
    /// Element-wise maximum of `v` over every device, in place.
    fn max(&mut self, v: &mut [f64]) -> Result<(), String>;
    /// Every device's `v`, in device order.
    fn gather(&mut self, v: f64) -> Result<Vec<f64>, String>;
    /// Element-wise sum of `v` over every device, in place, wrapping: integers, so the
    /// result does not depend on the order (floating bodies' fixed-point loads).
    fn sum_i64(&mut self, v: &mut [i64]) -> Result<(), String>;
}

/// Bits of each of the three limbs an i64 is cut into to be summed over MPI ranks as f64:
/// limb sums stay exact integers for up to 2^31 ranks.
const LIMB: u32 = 22;

/// `v` as limbs `v[k] = l0 + l1 2^22 + l2 2^44` (l0, l1 unsigned, l2 signed), as f64.
fn to_limbs(v: &[i64]) -> Vec<f64> {
    let mask = (1i64 << LIMB) - 1;
    v.iter().flat_map(|&x| [(x & mask) as f64, ((x >> LIMB) & mask) as f64, (x >> (2 * LIMB)) as f64]).collect()
}

/// The i64 values of summed limbs, wrapping.
fn from_limbs(l: &[f64], v: &mut [i64]) {
    for (x, l) in v.iter_mut().zip(l.chunks_exact(3)) {
        *x = (l[0] as i64)
            .wrapping_add((l[1] as i64).wrapping_shl(LIMB))
            .wrapping_add((l[2] as i64).wrapping_shl(2 * LIMB));
    }
}

/// A device alone: nothing to exchange.
pub struct Solo;

impl Exchange for Solo {
    fn device(&self) -> usize {
        0
    }
    fn devices(&self) -> usize {
        1
    }
    fn send(&mut self, side: Side, _: Packet) -> Result<(), String> {
        Err(format!("a device alone has no {side:?} neighbour"))
    }
    fn recv(&mut self, side: Side) -> Result<Packet, String> {
        Err(format!("a device alone has no {side:?} neighbour"))
    }
    fn max(&mut self, _: &mut [f64]) -> Result<(), String> {
        Ok(())
    }
    fn gather(&mut self, v: f64) -> Result<Vec<f64>, String> {
        Ok(vec![v])
    }
    fn sum_i64(&mut self, _: &mut [i64]) -> Result<(), String> {
        Ok(())
    }
}

/// The devices of this process: channels between their threads (sends move host
/// buffers, no copy), and MPI through the process's [`Cluster`] to the devices of other
/// ranks. Devices are numbered rank-major: rank r holds `r k .. (r + 1) k`.
pub struct Local {
    me: usize,
    n: usize,
    /// This device's index on its rank, and the rank's device count.
    li: usize,
    k: usize,
    to: [Option<Sender<Packet>>; 2],
    from: [Option<Receiver<Packet>>; 2],
    /// The rank of a neighbour on another rank.
    remote: [Option<usize>; 2],
    /// Collective values to every other device of this rank, and from each.
    coll_to: Vec<Option<Sender<Vec<f64>>>>,
    coll_from: Vec<Option<Receiver<Vec<f64>>>>,
    /// The rank's first device hands the ranks' result to the others.
    bcast_to: Vec<Option<Sender<Vec<f64>>>>,
    bcast_from: Option<Receiver<Vec<f64>>>,
    cluster: Arc<dyn Cluster>,
}

/// Links for `n` devices of one process and no other rank, in device order.
pub fn local(n: usize) -> Vec<Local> {
    links(Arc::new(Single), n)
}

/// Links for the `k` devices of this rank (every rank has `k`), in device order.
pub fn links(cluster: Arc<dyn Cluster>, k: usize) -> Vec<Local> {
    let (rank, size) = (cluster.rank(), cluster.size());
    let mut links: Vec<Local> = (0..k)
        .map(|li| Local {
            me: rank * k + li,
            n: size * k,
            li,
            k,
            to: [None, None],
            from: [None, None],
            remote: [(li == 0 && rank > 0).then(|| rank - 1), (li + 1 == k && rank + 1 < size).then(|| rank + 1)],
            coll_to: (0..k).map(|_| None).collect(),
            coll_from: (0..k).map(|_| None).collect(),
            bcast_to: (0..k).map(|_| None).collect(),
            bcast_from: None,
            cluster: cluster.clone(),
        })
        .collect();
    for d in 1..k {
        // d - 1 -> d (d's left) and d -> d - 1 (d - 1's right).
        let (tx, rx) = channel();
        links[d - 1].to[Side::Right as usize] = Some(tx);
        links[d].from[Side::Left as usize] = Some(rx);
        let (tx, rx) = channel();
        links[d].to[Side::Left as usize] = Some(tx);
        links[d - 1].from[Side::Right as usize] = Some(rx);
    }
    for a in 0..k {
        for b in 0..k {
            if a != b {
                let (tx, rx) = channel();
                links[a].coll_to[b] = Some(tx);
                links[b].coll_from[a] = Some(rx);
            }
        }
    }
    for d in 1..k {
        let (tx, rx) = channel();
        links[0].bcast_to[d] = Some(tx);
        links[d].bcast_from = Some(rx);
    }
    links
}

impl Local {
    fn gone(&self, d: usize) -> String {
        format!("device {d} stopped (its worker ended)")
    }
    fn neighbour(&self, side: Side) -> usize {
        match side {
            Side::Left => self.me.wrapping_sub(1),
            Side::Right => self.me + 1,
        }
    }
    fn local_id(&self, li: usize) -> usize {
        self.me - self.li + li
    }
    /// Every local device's vector, in device order.
    fn all_local(&mut self, v: Vec<f64>) -> Result<Vec<Vec<f64>>, String> {
        for d in 0..self.k {
            if let Some(tx) = &self.coll_to[d] {
                tx.send(v.clone()).map_err(|_| self.gone(self.local_id(d)))?;
            }
        }
        let mut out = Vec::with_capacity(self.k);
        for d in 0..self.k {
            match &self.coll_from[d] {
                None => out.push(v.clone()),
                Some(rx) => out.push(rx.recv().map_err(|_| self.gone(self.local_id(d)))?),
            }
        }
        Ok(out)
    }
    /// The rank's first device runs `f` on this rank's value (the MPI collective, once per
    /// rank) and hands the result to the others.
    fn across_ranks(
        &mut self,
        local: Vec<f64>,
        f: impl FnOnce(&dyn Cluster, Vec<f64>) -> Vec<f64>,
    ) -> Result<Vec<f64>, String> {
        if self.cluster.size() == 1 {
            return Ok(local);
        }
        if self.li == 0 {
            let all = f(self.cluster.as_ref(), local);
            for d in 1..self.k {
                if let Some(tx) = &self.bcast_to[d] {
                    tx.send(all.clone()).map_err(|_| self.gone(self.local_id(d)))?;
                }
            }
            Ok(all)
        } else {
            let first = self.local_id(0);
            self.bcast_from.as_ref().ok_or("no link to the rank's first device")?.recv().map_err(|_| self.gone(first))
        }
    }
    fn tag_to(side: Side) -> i32 {
        match side {
            Side::Right => tag::RIGHTWARD,
            Side::Left => tag::LEFTWARD,
        }
    }
}

impl Exchange for Local {
    fn device(&self) -> usize {
        self.me
    }
    fn devices(&self) -> usize {
        self.n
    }
    fn remote(&self, side: Side) -> bool {
        self.remote[side as usize].is_some()
    }
    fn send(&mut self, side: Side, p: Packet) -> Result<(), String> {
        if let Some(rank) = self.remote[side as usize] {
            let tag = Self::tag_to(side);
            let (first, rest) = encode(p);
            self.cluster.send(rank, tag, first);
            for part in rest {
                self.cluster.send_owned(rank, tag, part);
            }
            return Ok(());
        }
        let d = self.neighbour(side);
        match &self.to[side as usize] {
            Some(tx) => tx.send(p).map_err(|_| self.gone(d)),
            None => Err(format!("device {} has no {side:?} neighbour", self.me)),
        }
    }
    fn recv(&mut self, side: Side) -> Result<Packet, String> {
        if let Some(rank) = self.remote[side as usize] {
            // What the neighbour sent towards this side travels the other way.
            let tag = Self::tag_to(side.opposite());
            let cluster = self.cluster.clone();
            return decode(&cluster.recv(rank, tag), |buf| cluster.recv_into(rank, tag, buf));
        }
        let d = self.neighbour(side);
        match &self.from[side as usize] {
            Some(rx) => rx.recv().map_err(|_| self.gone(d)),
            None => Err(format!("device {} has no {side:?} neighbour", self.me)),
        }
    }
    fn max(&mut self, v: &mut [f64]) -> Result<(), String> {
        let all = self.all_local(v.to_vec())?;
        let local: Vec<f64> =
            (0..v.len()).map(|k| all.iter().map(|w| w[k]).fold(f64::NEG_INFINITY, f64::max)).collect();
        let r = self.across_ranks(local, |c, mut x| {
            c.max(&mut x);
            x
        })?;
        v.copy_from_slice(&r);
        Ok(())
    }
    fn gather(&mut self, v: f64) -> Result<Vec<f64>, String> {
        let local: Vec<f64> = self.all_local(vec![v])?.into_iter().map(|w| w[0]).collect();
        self.across_ranks(local, |c, x| c.all_gather(&x))
    }
    fn sum_i64(&mut self, v: &mut [i64]) -> Result<(), String> {
        // Within the rank the integers travel as f64 bit patterns, untouched.
        let bits = v.iter().map(|&x| f64::from_bits(x as u64)).collect();
        let all = self.all_local(bits)?;
        for (k, x) in v.iter_mut().enumerate() {
            *x = all.iter().fold(0i64, |s, w| s.wrapping_add(w[k].to_bits() as i64));
        }
        let limbs = self.across_ranks(to_limbs(v), |c, mut x| {
            c.sum(&mut x);
            x
        })?;
        from_limbs(&limbs, v);
        Ok(())
    }
}

/// A packet as MPI messages: the first holds a kind byte, then the number of force values, a
/// shared device block, or for particles a header (postcard: buffer set and count); the
/// force values follow as one message, the particles' buffers as one message each, moved
/// out of the packet (no copy: MPI reads them where they are, and writes them where they
/// go, [`decode`]).
pub fn encode(p: Packet) -> (Vec<u8>, Vec<OwnedBytes>) {
    let first = |kind: u8, body: &[u8]| [&[kind][..], body].concat();
    match p {
        // A local device block never crosses ranks (the worker sends none there): a failure.
        Packet::Failed | Packet::Device(DeviceBlock::Local(_)) => (vec![0], Vec::new()),
        Packet::Forces(v) => (first(1, &(v.len() as u64).to_le_bytes()), vec![OwnedBytes::new(v)]),
        Packet::Device(DeviceBlock::Shared(b)) => (first(3, &b), Vec::new()),
        Packet::Offer(b) => (first(4, &b), Vec::new()),
        Packet::Particles(s) => {
            let set = s.buffers();
            let head = postcard::to_stdvec(&(set.0, s.len() as u64)).expect("a header serialises");
            let mut arrays = s.into_arrays();
            // Each buffer's allocation goes to the pool of host buffers once MPI has sent it,
            // for the next rebuild's particles.
            (first(2, &head), set.iter().map(|b| arrays.take_bytes(b, true)).collect())
        }
    }
}

/// The packet [`encode`] wrote: its first message, and `next` to receive each message that
/// follows into the buffer it is given (which it must fill exactly).
pub fn decode(first: &[u8], mut next: impl FnMut(&mut [u8]) -> Result<(), String>) -> Result<Packet, String> {
    let bad = || "a malformed message from a neighbouring rank".to_string();
    let body = first.get(1..).unwrap_or_default();
    match first.first() {
        Some(0) => Ok(Packet::Failed),
        Some(1) => {
            let n = u64::from_le_bytes(body.try_into().map_err(|_| bad())?) as usize;
            let mut v = vec![[0f32; 4]; n];
            next(bytemuck::cast_slice_mut(&mut v))
                .map_err(|e| format!("force values from a neighbouring rank: {e}"))?;
            Ok(Packet::Forces(v))
        }
        Some(2) => {
            let (set, n): (u32, u64) = postcard::from_bytes(body).map_err(|_| bad())?;
            // Into host buffers kept from rebuild to rebuild (every byte is received).
            let mut s = ParticleState::pooled(n as usize, BufferSet(set));
            for b in s.buffers().iter() {
                next(s.bytes_mut(b)).map_err(|e| format!("particles from a neighbouring rank: {e}"))?;
            }
            Ok(Packet::Particles(s))
        }
        Some(3) => Ok(Packet::Device(DeviceBlock::Shared(body.to_vec()))),
        Some(4) => Ok(Packet::Offer(body.to_vec())),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_links_pass_packets_and_reduce_in_device_order() {
        let links = local(3);
        let handles: Vec<_> = links
            .into_iter()
            .map(|mut l| {
                std::thread::spawn(move || {
                    let me = l.device();
                    if me > 0 {
                        l.send(Side::Left, Packet::Forces(vec![[me as f32; 4]])).unwrap();
                    }
                    let got = if me < 2 {
                        match l.recv(Side::Right).unwrap() {
                            Packet::Forces(v) => v[0][0],
                            p => panic!("{}", p.kind()),
                        }
                    } else {
                        -1.0
                    };
                    let mut v = [me as f64, -(me as f64)];
                    l.max(&mut v).unwrap();
                    (got, v, l.gather(me as f64 * 10.0).unwrap())
                })
            })
            .collect();
        let r: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(r[0].0, 1.0);
        assert_eq!(r[1].0, 2.0);
        for (_, v, g) in &r {
            assert_eq!(*v, [2.0, 0.0]);
            assert_eq!(*g, vec![0.0, 10.0, 20.0]);
        }
    }

    #[test]
    fn packets_survive_the_bytes_of_mpi() {
        // The messages of `encode`, received one after the other as MPI would deliver them.
        let round_trip = |p: Packet| {
            let (first, rest) = encode(p);
            let mut rest = rest.into_iter();
            decode(&first, |buf| {
                let m = rest.next().ok_or("no more messages")?;
                if m.bytes().len() != buf.len() {
                    return Err(format!("{} bytes, expected {}", m.bytes().len(), buf.len()));
                }
                buf.copy_from_slice(m.bytes());
                Ok(())
            })
        };
        let mut a = surge_core::buffers::ParticleArrays::zeroed(3);
        for i in 0..3 {
            a.info[i] = [7 - i as u32, 1];
            a.pos[i] = [i as f32, -0.5, f32::MIN_POSITIVE, 1e-3];
        }
        let mut s = ParticleState::default();
        s.copy_from(&a, BufferSet::all());
        match round_trip(Packet::Particles(s.clone())).unwrap() {
            Packet::Particles(t) => {
                assert_eq!(t.buffers(), s.buffers());
                for b in s.buffers().iter() {
                    assert_eq!(t.bytes(b), s.bytes(b));
                }
            }
            p => panic!("{}", p.kind()),
        }
        let f = vec![[1.0f32, -2.0, 3.5, f32::NAN]; 5];
        match round_trip(Packet::Forces(f.clone())).unwrap() {
            Packet::Forces(g) => assert_eq!(bytemuck::cast_slice::<_, u32>(&g), bytemuck::cast_slice::<_, u32>(&f)),
            p => panic!("{}", p.kind()),
        }
        assert!(matches!(round_trip(Packet::Failed).unwrap(), Packet::Failed));
        match round_trip(Packet::Device(DeviceBlock::Shared(vec![9, 0, 7]))).unwrap() {
            Packet::Device(DeviceBlock::Shared(b)) => assert_eq!(b, [9, 0, 7]),
            p => panic!("{}", p.kind()),
        }
        match round_trip(Packet::Offer(vec![])).unwrap() {
            Packet::Offer(b) => assert!(b.is_empty()),
            p => panic!("{}", p.kind()),
        }
        // A header whose buffers do not follow, or follow short, is an error.
        let (first, _) = encode(Packet::Particles(s.clone()));
        assert!(decode(&first, |_| Err("no more messages".into())).is_err());
        assert!(decode(&[2, 0x80], |_| Ok(())).is_err());
        assert!(decode(&[], |_| Ok(())).is_err());
    }

    #[test]
    fn a_stopped_device_is_an_error_not_a_hang() {
        let mut links = local(2);
        let l1 = links.pop().unwrap();
        drop(l1);
        let mut l0 = links.pop().unwrap();
        assert!(l0.recv(Side::Right).unwrap_err().contains("device 1 stopped"));
        assert!(l0.max(&mut [1.0]).unwrap_err().contains("device 1 stopped"));
    }
}
