//! Frame output: one file per format per frame, and the `.pvd` collection that lets ParaView
//! open the whole series with simulated times.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use surge_core::backend::Snapshot;
use surge_core::config::OutputFormat;

use crate::{invalid, with_path, write_atomic, write_atomic_with, xml_attr};

/// Writes the frames of one run and keeps its `.pvd` index up to date.
#[derive(Debug)]
pub struct FrameWriter {
    out_dir: PathBuf,
    case: String,
    dim: usize,
    vtu: bool,
    csv: bool,
    /// (time, path relative to `out_dir`) of every VTU frame listed in the `.pvd`, by time.
    listed: Vec<(f64, String)>,
    /// This writer's piece and the number of pieces (MPI ranks): with several, each writes
    /// `<case>_NNNNN_pRRRR.vtu`, piece 0 also the `.pvtu` joining them and the `.pvd`.
    piece: (usize, usize),
}

impl FrameWriter {
    /// Creates `out_dir/frames/` (and `out_dir`) and checks that it can be written, so that a
    /// bad output folder fails the run at its start rather than at its first frame.
    pub fn create(out_dir: &Path, case_name: &str, dim: usize, formats: &[OutputFormat]) -> io::Result<FrameWriter> {
        if case_name.is_empty() || case_name.contains(['/', '\\']) || case_name == "." || case_name == ".." {
            let msg = format!("case name {case_name:?} cannot be used in file names");
            return Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        }
        if dim != 2 && dim != 3 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("dimension {dim} is not 2 or 3")));
        }
        let frames = out_dir.join("frames");
        fs::create_dir_all(&frames).map_err(|e| with_path(e, "create output directory", &frames))?;
        let probe = frames.join(format!(".surge-probe-{}", std::process::id()));
        fs::write(&probe, b"")
            .and_then(|()| fs::remove_file(&probe))
            .map_err(|e| with_path(e, "write to output directory", &frames))?;
        Ok(FrameWriter {
            out_dir: out_dir.to_owned(),
            case: case_name.to_owned(),
            dim,
            vtu: formats.contains(&OutputFormat::Vtu),
            csv: formats.contains(&OutputFormat::Csv),
            listed: Vec::new(),
            piece: (0, 1),
        })
    }

    /// Write piece `piece` of `pieces` of every frame (one per MPI rank); piece 0 also writes
    /// the `.pvtu` and the `.pvd`, which ParaView opens as one data set.
    pub fn with_piece(mut self, piece: usize, pieces: usize) -> FrameWriter {
        self.piece = (piece, pieces.max(1));
        self
    }

    /// Writes frame `index` at simulated time `time` in every format asked for, particles in
    /// id order so that files of different runs compare line by line, each file atomically.
    /// With VTU, then rewrites `<case>.pvd` listing every VTU frame so far. Returns the frame
    /// files written (VTU, then CSV; the `.pvd` is not included).
    pub fn write_frame(&mut self, index: u32, time: f64, snap: &Snapshot) -> io::Result<Vec<PathBuf>> {
        let n = snap.len();
        if [snap.kind.len(), snap.pos.len(), snap.vel.len(), snap.rho.len(), snap.p.len()].iter().any(|&l| l != n) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "snapshot arrays differ in length"));
        }
        let order = snap.order_by_id();
        let (piece, pieces) = self.piece;
        let frame = format!("{}_{index:05}", self.case);
        let stem = if pieces > 1 { format!("{frame}_p{piece:04}") } else { frame.clone() };
        let mut written = Vec::new();
        if self.vtu {
            let path = self.out_dir.join("frames").join(format!("{stem}.vtu"));
            write_atomic_with(&path, |w| crate::vtu::write_vtu(w, snap, &order, self.dim))?;
            written.push(path);
            if piece != 0 {
                return self.write_csv(&stem, snap, &order, written);
            }
            let file = if pieces > 1 {
                let names: Vec<String> = (0..pieces).map(|p| format!("{frame}_p{p:04}.vtu")).collect();
                let pvtu = self.out_dir.join("frames").join(format!("{frame}.pvtu"));
                write_atomic_with(&pvtu, |w| crate::vtu::write_pvtu(w, &names))?;
                written.push(pvtu);
                format!("frames/{frame}.pvtu")
            } else {
                format!("frames/{stem}.vtu")
            };
            // A frame written again (after a restart) replaces its old entry.
            self.listed.retain(|(_, f)| *f != file);
            self.listed.push((time, file));
            self.listed.sort_by(|a, b| a.0.total_cmp(&b.0));
            self.write_pvd()?;
        }
        self.write_csv(&stem, snap, &order, written)
    }

    fn write_csv(
        &self,
        stem: &str,
        snap: &Snapshot,
        order: &[usize],
        mut written: Vec<PathBuf>,
    ) -> io::Result<Vec<PathBuf>> {
        if self.csv {
            let path = self.out_dir.join("frames").join(format!("{stem}.csv"));
            write_atomic_with(&path, |w| crate::csv::write_csv(w, snap, order, self.dim))?;
            written.push(path);
        }
        Ok(written)
    }

    /// Continues the series of an earlier run after a restart at `up_to_time`: frames listed
    /// in the existing `<case>.pvd` at or before that time are kept, later ones dropped (their
    /// files stay until overwritten). A missing `.pvd` starts an empty list.
    pub fn resume(&mut self, up_to_time: f64) -> io::Result<()> {
        let path = self.pvd_path();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(with_path(e, "read", &path)),
        };
        let mut listed = Vec::new();
        for tag in text.split("<DataSet").skip(1) {
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            let time = xml_attr(tag, "timestep").and_then(|t| t.parse::<f64>().ok());
            match (time, xml_attr(tag, "file")) {
                (Some(t), Some(file)) => listed.push((t, xml_unescape(file))),
                _ => return Err(invalid(&path, format!("bad DataSet entry <DataSet{tag}>"))),
            }
        }
        listed.retain(|&(t, _)| t <= up_to_time);
        listed.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.listed = listed;
        if self.vtu && self.piece.0 == 0 {
            self.write_pvd()?;
        }
        Ok(())
    }

    fn pvd_path(&self) -> PathBuf {
        self.out_dir.join(format!("{}.pvd", self.case))
    }

    fn write_pvd(&self) -> io::Result<()> {
        let mut s = String::from(
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n  \
             <Collection>\n",
        );
        for (t, file) in &self.listed {
            let file = xml_escape(file);
            let _ = writeln!(s, "    <DataSet timestep=\"{t}\" group=\"\" part=\"0\" file=\"{file}\"/>");
        }
        s.push_str("  </Collection>\n</VTKFile>\n");
        write_atomic(&self.pvd_path(), s.as_bytes())
    }
}

/// Case names are the user's: keep characters special to XML from breaking the `.pvd`.
pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn xml_unescape(s: &str) -> String {
    s.replace("&quot;", "\"").replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_csv_frame, read_vtu, test_dir};

    /// Five particles stored out of id order, with values that need every digit.
    fn snapshot(dim: usize) -> Snapshot {
        let id = vec![3, 0, 4, 1, 2];
        let z = |k: u32| if dim == 3 { 0.3 * k as f64 + 1e-9 } else { 0.0 };
        Snapshot {
            kind: id.iter().map(|&k| (k % 2) as u8).collect(),
            pos: id.iter().map(|&k| [0.1 * k as f64 + 1e-12, 1.0 / 3.0 - k as f64, z(k)]).collect(),
            // In 2D the third velocity component is garbage on purpose: it must come out 0.
            vel: id.iter().map(|&k| [k as f32 * 0.7, -1.0 / (k as f32 + 3.0), 2.5e-7 * k as f32 + 9.0]).collect(),
            rho: id.iter().map(|&k| 1000.0 + k as f32 / 7.0).collect(),
            p: id.iter().map(|&k| -3.25 + k as f32 * 1e5 / 3.0).collect(),
            id,
        }
    }

    fn round_trip(dim: usize) {
        let dir = test_dir(&format!("round_trip_{dim}d"));
        let snap = snapshot(dim);
        let mut fw = FrameWriter::create(&dir, "case", dim, &[OutputFormat::Vtu, OutputFormat::Csv]).unwrap();
        let paths = fw.write_frame(7, 0.5, &snap).unwrap();
        let vtu_path = dir.join("frames/case_00007.vtu");
        let csv_path = dir.join("frames/case_00007.csv");
        assert_eq!(paths, [vtu_path.clone(), csv_path.clone()]);

        let order = snap.order_by_id();
        let vel = |i: usize, c: usize| if c == 2 && dim == 2 { 0.0 } else { snap.vel[i][c] };
        let vtu = read_vtu(&vtu_path).unwrap();
        assert_eq!(vtu.points, order.iter().map(|&i| snap.pos[i]).collect::<Vec<_>>());
        let a = &vtu.arrays;
        assert_eq!(a["id"], [0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(a["kind"], order.iter().map(|&i| snap.kind[i] as f64).collect::<Vec<_>>());
        assert_eq!(a["density"], order.iter().map(|&i| snap.rho[i] as f64).collect::<Vec<_>>());
        assert_eq!(a["pressure"], order.iter().map(|&i| snap.p[i] as f64).collect::<Vec<_>>());
        let v: Vec<f64> = order.iter().flat_map(|&i| (0..3).map(move |c| vel(i, c) as f64)).collect();
        assert_eq!(a["velocity"], v);

        let csv = read_csv_frame(&csv_path).unwrap();
        let header = if dim == 2 { "id,kind,x,y,vx,vy,rho,p" } else { "id,kind,x,y,z,vx,vy,vz,rho,p" };
        assert_eq!(csv.header.join(","), header);
        assert_eq!(csv.ids, [0, 1, 2, 3, 4]);
        assert_eq!(csv.kinds, ["fluid", "boundary", "fluid", "boundary", "fluid"]);
        for c in 0..dim {
            let pos: Vec<f64> = order.iter().map(|&i| snap.pos[i][c]).collect();
            assert_eq!(csv.column(["x", "y", "z"][c]).unwrap(), pos);
            let v: Vec<f32> = order.iter().map(|&i| snap.vel[i][c]).collect();
            let back: Vec<f32> = csv.column(["vx", "vy", "vz"][c]).unwrap().iter().map(|&x| x as f32).collect();
            assert_eq!(back, v);
        }
        let rho: Vec<f32> = csv.column("rho").unwrap().iter().map(|&x| x as f32).collect();
        assert_eq!(rho, order.iter().map(|&i| snap.rho[i]).collect::<Vec<_>>());
        let p: Vec<f32> = csv.column("p").unwrap().iter().map(|&x| x as f32).collect();
        assert_eq!(p, order.iter().map(|&i| snap.p[i]).collect::<Vec<_>>());
    }

    #[test]
    fn round_trip_2d() {
        round_trip(2);
    }

    #[test]
    fn round_trip_3d() {
        round_trip(3);
    }

    #[test]
    fn empty_snapshot_round_trips() {
        let dir = test_dir("empty");
        let mut fw = FrameWriter::create(&dir, "e", 3, &[OutputFormat::Vtu, OutputFormat::Csv]).unwrap();
        fw.write_frame(0, 0.0, &Snapshot::default()).unwrap();
        let vtu = read_vtu(&dir.join("frames/e_00000.vtu")).unwrap();
        assert!(vtu.points.is_empty() && vtu.arrays["id"].is_empty());
        assert!(read_csv_frame(&dir.join("frames/e_00000.csv")).unwrap().ids.is_empty());
    }

    fn pvd_entries(dir: &Path, case: &str) -> Vec<String> {
        let text = fs::read_to_string(dir.join(format!("{case}.pvd"))).unwrap();
        text.lines().filter(|l| l.contains("<DataSet")).map(|l| l.trim().to_owned()).collect()
    }

    #[test]
    fn pvd_lists_every_frame_and_resume_keeps_earlier_ones() {
        let dir = test_dir("pvd");
        let snap = snapshot(2);
        let mut fw = FrameWriter::create(&dir, "a&b", 2, &[OutputFormat::Vtu]).unwrap();
        for k in 0..4 {
            fw.write_frame(k, k as f64 * 0.1, &snap).unwrap();
        }
        let entries = pvd_entries(&dir, "a&b");
        assert_eq!(entries.len(), 4);
        assert_eq!(
            entries[3],
            r#"<DataSet timestep="0.30000000000000004" group="" part="0" file="frames/a&amp;b_00003.vtu"/>"#
        );
        assert!(!dir.join("a&b.pvd.tmp").exists());

        // A restart at the time of frame 2 keeps frames 0..=2, then writes frame 3 anew.
        let mut fw = FrameWriter::create(&dir, "a&b", 2, &[OutputFormat::Vtu]).unwrap();
        fw.resume(0.2).unwrap();
        assert_eq!(pvd_entries(&dir, "a&b")[..], entries[..3]);
        fw.write_frame(3, 0.35, &snap).unwrap();
        let after = pvd_entries(&dir, "a&b");
        assert_eq!(after.len(), 4);
        assert!(after[3].contains(r#"timestep="0.35""#) && after[3].contains("a&amp;b_00003.vtu"));
    }

    #[test]
    fn pieces_are_joined_by_a_pvtu_listed_in_the_pvd() {
        let dir = crate::test_dir("pieces");
        let mut w0 = FrameWriter::create(&dir, "c", 2, &[OutputFormat::Vtu]).unwrap().with_piece(0, 2);
        let mut w1 = FrameWriter::create(&dir, "c", 2, &[OutputFormat::Vtu]).unwrap().with_piece(1, 2);
        let files = w0.write_frame(0, 0.0, &snapshot(2)).unwrap();
        w1.write_frame(0, 0.0, &snapshot(2)).unwrap();
        assert!(files.iter().any(|f| f.ends_with("frames/c_00000.pvtu")));
        let pvtu = std::fs::read_to_string(dir.join("frames/c_00000.pvtu")).unwrap();
        assert!(pvtu.contains("<Piece Source=\"c_00000_p0000.vtu\"/>") && pvtu.contains("c_00000_p0001.vtu"));
        assert!(pvtu.contains("PDataArray type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\""));
        for p in ["c_00000_p0000.vtu", "c_00000_p0001.vtu"] {
            assert_eq!(crate::read_vtu(&dir.join("frames").join(p)).unwrap().points.len(), snapshot(2).len());
        }
        assert_eq!(pvd_entries(&dir, "c").len(), 1);
        assert!(pvd_entries(&dir, "c")[0].contains("file=\"frames/c_00000.pvtu\""));
    }

    #[test]
    fn create_under_a_file_fails_naming_the_directory() {
        let dir = test_dir("unwritable");
        let file = dir.join("not-a-dir");
        fs::write(&file, b"x").unwrap();
        let out = file.join("out");
        let err = FrameWriter::create(&out, "c", 2, &[OutputFormat::Vtu]).unwrap_err();
        assert!(err.to_string().contains(&out.display().to_string()), "{err}");
    }
}
