//! Fixtures: a temp `$ZOT_HOME` and project, extension dirs that run the
//! SDK-built example binaries (recording every frame they write), schema
//! validation of those frames, and deadline-based waiting.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use zot_extensions::{ExtensionHost, HostConfig, HostEvent, Limits, LoadedInfo, ReportStatus};

pub const SECS5: Duration = Duration::from_secs(5);

/// Where the probe records every frame it writes (beside its manifest).
pub const SENT: &str = "sent.jsonl";

pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub scratch: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        let scratch = tmp.path().join("scratch");
        for dir in [&home, &project, &scratch] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Self {
            _tmp: tmp,
            home,
            project,
            scratch,
        }
    }

    /// An extension dir running the `probe` example as extension `name`
    /// (with `args` after the name). Its `run` script copies everything the
    /// probe writes to stdout into `sent.jsonl`, and keeps its exit status.
    pub fn probe(&self, name: &str, args: &[&str]) -> PathBuf {
        let dir = self.scratch.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let args: Vec<&str> = [name].into_iter().chain(args.iter().copied()).collect();
        let manifest = serde_json::json!({"name": name, "exec": "./run", "args": args});
        std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
        let run = format!(
            "#!/usr/bin/env bash\nset -o pipefail\n'{}' \"$@\" | tee -a {SENT}\n",
            example_bin("probe").display()
        );
        write_exec(&dir.join("run"), &run);
        dir
    }

    /// Host config for this env with `--ext` dirs and test-sized limits.
    pub fn config(&self, explicit: &[&Path]) -> HostConfig {
        let mut config = HostConfig::new(&self.home, &self.project);
        config.explicit = explicit.iter().map(|p| p.to_path_buf()).collect();
        config.provider = "anthropic".into();
        config.model = "test-model".into();
        config.zot_version = "9.9.9".into();
        config.limits = Limits {
            hello_timeout: SECS5,
            command_timeout: SECS5,
            tool_timeout: SECS5,
            intercept_timeout: Duration::from_secs(3),
            shutdown_grace: Duration::from_millis(1500),
            term_grace: Duration::from_millis(500),
            ..Limits::default()
        };
        config
    }

    pub async fn start(&self, explicit: &[&Path]) -> (ExtensionHost, UnboundedReceiver<HostEvent>) {
        ExtensionHost::start(self.config(explicit)).await
    }

    /// The project dir as the host reports it in `hello_ack`.
    pub fn cwd(&self) -> String {
        std::path::absolute(&self.project)
            .unwrap()
            .display()
            .to_string()
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.home.join("logs").join(format!("ext-{name}.log")))
            .unwrap_or_default()
    }
}

/// A binary cargo built for an example of this crate: beside the test
/// binary's `deps/` dir, in `examples/`.
pub fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = profile_dir.join("examples").join(name);
    assert!(bin.is_file(), "{} not built", bin.display());
    bin
}

pub use zot_testkit::write_exec;

/// Every frame the probe in `dir` has written so far.
pub fn sent(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join(SENT))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `type`s of those frames, in order.
pub fn sent_types(dir: &Path) -> Vec<String> {
    sent(dir)
        .iter()
        .map(|f| f["type"].as_str().unwrap().to_owned())
        .collect()
}

static EXT_FRAME_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let (_, schema) = zot_protocol::schemas()
        .into_iter()
        .find(|(name, _)| *name == zot_protocol::schema::EXT_FRAME_SCHEMA)
        .unwrap();
    jsonschema::validator_for(&schema).unwrap()
});

/// Asserts that every frame the probe in `dir` wrote is valid under the
/// exported extension → host schema; returns how many there were.
pub fn assert_frames_valid(dir: &Path) -> usize {
    let frames = sent(dir);
    for frame in &frames {
        let errors: Vec<String> = EXT_FRAME_SCHEMA
            .iter_errors(frame)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{frame} violates the schema: {errors:?}");
    }
    frames.len()
}

/// The loaded extension named `name` in the host's report.
pub fn loaded(host: &ExtensionHost, name: &str) -> LoadedInfo {
    let report = host.report();
    let entry = report
        .iter()
        .find(|r| r.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("{name} not in {report:?}"));
    match &entry.status {
        ReportStatus::Loaded(info) => info.clone(),
        other => panic!("{name} did not load: {other:?}"),
    }
}

pub use zot_testkit::wait::{eventually, next_matching as event_matching};
