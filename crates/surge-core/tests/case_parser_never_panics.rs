//! The case-file parser answers any input with `Ok` or a `CaseError`, never a panic: random
//! text, and the shipped configs (every file of configs/, so new ones are covered) mangled by
//! random edits that keep them close to valid, where the checks beyond TOML syntax are hit.

use proptest::prelude::*;
use surge_core::Case;

/// The shipped configs, read when the test runs.
fn configs() -> Vec<String> {
    config_files().iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

/// The shipped config files, sorted.
fn config_files() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no configs in {}", dir.display());
    files
}

/// Values that stress the checks: zero, negative, huge, tiny, non-finite, wrong types,
/// vectors of every length.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "3",
    "4294967296",
    "-9223372036854775808",
    "\"x\"",
    "\"\"",
    "true",
    "[]",
    "[0.0]",
    "[1.0, 2.0]",
    "[1.0, 2.0, 3.0]",
    "[1.0, 2.0, 3.0, 4.0]",
    "[nan, 1.0]",
    "[1e308, -1e308, 0.0]",
    "{}",
    "{ kind = \"x\" }",
    "\"lind\"",
    "\"verlet\"",
    "\"laminar\"",
    "[\"x\"]",
    "[\"x\", \"y\", \"z\"]",
    "\"x-\"",
];

/// One edit of a config's text.
#[derive(Debug, Clone)]
enum Edit {
    /// Replace the value of the k-th `key = value` line.
    Value(usize, usize),
    /// Delete the k-th line.
    DeleteLine(usize),
    /// Duplicate the k-th line.
    DuplicateLine(usize),
    /// Insert text at a character position.
    Insert(usize, String),
    /// Delete a run of characters.
    Cut(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0..VALUES.len()).prop_map(|(k, v)| Edit::Value(k, v)),
        any::<usize>().prop_map(Edit::DeleteLine),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), ".{0,12}").prop_map(|(k, s)| Edit::Insert(k, s)),
        (any::<usize>(), 1usize..40).prop_map(|(k, n)| Edit::Cut(k, n)),
    ]
}

fn apply(text: &str, e: &Edit) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let chars: Vec<char> = text.chars().collect();
    match e {
        Edit::Value(k, v) => {
            let with_value: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains('=')).collect();
            if with_value.is_empty() {
                return text.to_string();
            }
            let i = with_value[k % with_value.len()];
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let key = lines[i].split('=').next().unwrap_or("");
            out[i] = format!("{key}= {}", VALUES[*v]);
            out.join("\n")
        }
        Edit::DeleteLine(k) | Edit::DuplicateLine(k) if !lines.is_empty() => {
            let i = k % lines.len();
            let mut out: Vec<&str> = lines.clone();
            if matches!(e, Edit::DeleteLine(_)) {
                out.remove(i);
            } else {
                out.insert(i, lines[i]);
            }
            out.join("\n")
        }
        Edit::Insert(k, s) => {
            let i = k % (chars.len() + 1);
            chars[..i].iter().chain(s.chars().collect::<Vec<_>>().iter()).chain(&chars[i..]).collect()
        }
        Edit::Cut(k, n) if !chars.is_empty() => {
            let i = k % chars.len();
            let j = (i + n).min(chars.len());
            chars[..i].iter().chain(&chars[j..]).collect()
        }
        _ => text.to_string(),
    }
}

/// Parse and check; a panic fails the property.
fn parses_without_panic(text: &str) {
    let _ = Case::from_str(text, &[]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_text(text in ".{0,300}") {
        parses_without_panic(&text);
    }

    #[test]
    fn random_bytes_as_text(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        parses_without_panic(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mangled_configs(which in any::<usize>(), edits in proptest::collection::vec(edit(), 1..6)) {
        let configs = configs();
        let mut text = configs[which % configs.len()].clone();
        for e in &edits {
            text = apply(&text, e);
        }
        parses_without_panic(&text);
    }

    #[test]
    fn random_overrides_of_existing_keys(which in any::<usize>(), sets in proptest::collection::vec((any::<usize>(), 0..VALUES.len()), 1..4)) {
        let configs = configs();
        let text = &configs[which % configs.len()];
        let keys = key_paths(text);
        let sets: Vec<String> = sets.iter().map(|(k, v)| format!("{}={}", keys[k % keys.len()], VALUES[*v])).collect();
        let _ = Case::from_str(text, &sets);
    }

    #[test]
    fn random_override_keys(which in any::<usize>(), key in "[a-z_.0-9]{1,24}", v in 0..VALUES.len()) {
        let configs = configs();
        let text = &configs[which % configs.len()];
        let _ = Case::from_str(text, &[format!("{key}={}", VALUES[v])]);
    }
}

/// Every key path of a TOML text, tables and array elements included (`gauge.0.point`), as
/// `--set` names them.
fn key_paths(text: &str) -> Vec<String> {
    fn walk(v: &toml::Value, prefix: &str, out: &mut Vec<String>) {
        let join = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
        match v {
            toml::Value::Table(t) => t.iter().for_each(|(k, x)| {
                out.push(join(k));
                walk(x, &join(k), out);
            }),
            toml::Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| {
                out.push(join(&i.to_string()));
                walk(x, &join(&i.to_string()), out);
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&toml::Value::Table(text.parse().expect("a shipped config is TOML")), "", &mut out);
    out
}

/// Every value of [`VALUES`] in every field of every shipped config, one at a time: a sweep
/// that random sampling might miss.
#[test]
fn every_field_of_every_config_takes_every_value() {
    let mut tried = 0;
    for text in configs() {
        for key in key_paths(&text) {
            for v in VALUES {
                let _ = Case::from_str(&text, &[format!("{key}={v}")]);
                tried += 1;
            }
        }
    }
    assert!(tried > 1000, "only {tried} overrides tried");
}

#[test]
fn shipped_configs_parse() {
    // From their files: a mesh is read relative to its case file.
    for path in config_files() {
        Case::from_file(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    }
}
