//! Extra start-up cost of a sandboxed process: what the host adds per
//! scoped extension (resolving the scope, building the Landlock ruleset and
//! seccomp filter, and in the child the namespaces, the read-only mounts,
//! no_new_privs, seccomp and restrict_self), measured as spawn-to-exit of `/bin/true` with and
//! without it (both through a `pre_exec` step, as extensions always are).
//! A plain harness: prints medians, p99 and means.
//!
//! `cargo bench -p zot-sandbox --bench startup`

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use zot_sandbox::{Enforce, Kernel, Places, Scope, prepare, resolve};

/// Spawns per variant; enough for a stable median on a shared 2-core machine.
const RUNS: usize = 300;

fn stats(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let median = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    let mean = samples.iter().sum::<Duration>() / u32::try_from(samples.len()).unwrap_or(1);
    println!(
        "{name:<34} median {:>8.1} µs, p99 {:>8.1} µs, mean {:>8.1} µs",
        micros(median),
        micros(p99),
        micros(mean)
    );
    median
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// CPU time (user + system) of this process and its reaped children: less
/// disturbed by other load on the machine than wall time.
fn cpu() -> Duration {
    let mut total = Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage fills the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut usage) };
        for t in [usage.ru_utime, usage.ru_stime] {
            let micros = u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000
                + u64::try_from(t.tv_usec).unwrap_or(0);
            total += Duration::from_micros(micros);
        }
    }
    total
}

/// CPU time of `RUNS` runs, per run.
fn cpu_per_run(name: &str, scope: Option<&Scope>, places: &Places) -> Duration {
    let before = cpu();
    for _ in 0..RUNS {
        run(scope, places);
    }
    let per = (cpu() - before) / u32::try_from(RUNS).unwrap_or(1);
    println!("{name:<34} CPU {:>8.1} µs per spawn", micros(per));
    per
}

/// The supervised variant: the scope `SUPERVISED` stands for no scope,
/// started under zot's supervisor (`supervise`), as every child zot starts is.
static SUPERVISED: std::sync::LazyLock<Scope> = std::sync::LazyLock::new(Scope::empty);

fn run(scope: Option<&Scope>, places: &Places) -> Duration {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let mut command = Command::new("/bin/true");
    // Extensions already start through a `pre_exec` step (the parent-death
    // signal), so fork+exec, not posix_spawn, is the baseline.
    // SAFETY: an empty step.
    unsafe {
        command.pre_exec(|| Ok(()));
    }
    if scope.is_some_and(|s| std::ptr::eq(s, &*SUPERVISED)) {
        zot_sandbox::supervise(&mut command);
    } else if let Some(scope) = scope {
        let path = std::env::var_os("PATH");
        let resolved = resolve(scope, places, "/bin/true".as_ref(), None, path.as_deref());
        match prepare(&resolved, &Kernel::get(), Enforce::BestEffort) {
            Ok(prepared) => prepared.apply(&mut command),
            Err(e) => panic!("{e}"),
        }
    }
    let status = command.status();
    assert!(status.is_ok_and(|s| s.success()));
    started.elapsed()
}

fn main() {
    let dir = std::env::temp_dir().join(format!("zot-sandbox-bench-{}", std::process::id()));
    let places = Places {
        project: dir.join("project"),
        data: dir.join("data"),
        tmp: dir.join("tmp"),
        home: dir.join("home"),
    };
    for d in [&places.project, &places.data, &places.tmp, &places.home] {
        let _ = std::fs::create_dir_all(d);
    }
    let none = Scope::parse(&json!({"read": ["project"], "write": ["tmp"], "net": "none"}));
    let tcp = Scope::parse(&json!({"read": ["project"], "write": ["tmp"], "net": ["tcp:443"]}));
    let all = Scope::parse(&json!({"read": ["project"], "write": ["tmp"], "net": "all"}));
    let (Ok(none), Ok(tcp), Ok(all)) = (none, tcp, all) else {
        panic!("bad scope");
    };
    println!("kernel: {}", Kernel::get().summary());
    // Warm up the page cache and the probes.
    for _ in 0..20 {
        run(None, &places);
        run(Some(&none), &places);
    }
    let path = std::env::var_os("PATH");
    stats(
        "resolve only (net none)",
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(resolve(
                    &none,
                    &places,
                    "/bin/true".as_ref(),
                    None,
                    path.as_deref(),
                ));
                t.elapsed()
            })
            .collect(),
    );
    let resolved = resolve(&none, &places, "/bin/true".as_ref(), None, path.as_deref());
    stats(
        "prepare only (net none)",
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                let _ =
                    std::hint::black_box(prepare(&resolved, &Kernel::get(), Enforce::BestEffort));
                t.elapsed()
            })
            .collect(),
    );
    // The variants take turns, spawn by spawn, so each sees the same machine
    // (other load on a shared machine moves wall times by milliseconds);
    // the extra cost is the median of each round's difference to the
    // unsandboxed spawn of the same round.
    let scopes: [(&str, Option<&Scope>); 5] = [
        ("unsandboxed fork+exec+exit", None),
        ("supervised, unsandboxed", Some(&*SUPERVISED)),
        ("scoped, net all (no network ns)", Some(&all)),
        ("scoped, net tcp:443", Some(&tcp)),
        ("scoped, net none (namespaces)", Some(&none)),
    ];
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for round in 0..RUNS {
        for turn in 0..scopes.len() {
            let which = (round + turn) % scopes.len();
            samples[which].push(run(scopes[which].1, &places));
        }
    }
    for ((name, _), runs) in scopes.iter().zip(&samples) {
        stats(name, runs.clone());
    }
    let extra = |which: usize| {
        let mut diffs: Vec<f64> = samples[which]
            .iter()
            .zip(&samples[0])
            .map(|(scoped, plain)| micros(*scoped) - micros(*plain))
            .collect();
        diffs.sort_by(f64::total_cmp);
        diffs[diffs.len() / 2] / 1000.0
    };
    println!(
        "extra per process (median of paired differences): supervisor {:.2} ms, net all {:.2} ms, tcp list {:.2} ms, net none {:.2} ms",
        extra(1),
        extra(2),
        extra(3),
        extra(4)
    );
    let base = cpu_per_run("unsandboxed", None, &places);
    let supervised = cpu_per_run("supervised", Some(&*SUPERVISED), &places);
    let all = cpu_per_run("scoped, net all", Some(&all), &places);
    let tcp = cpu_per_run("scoped, net tcp:443", Some(&tcp), &places);
    let none = cpu_per_run("scoped, net none", Some(&none), &places);
    println!(
        "extra CPU per process: supervisor {:.2} ms, net all {:.2} ms, tcp list {:.2} ms, net none {:.2} ms",
        (micros(supervised) - micros(base)) / 1000.0,
        (micros(all) - micros(base)) / 1000.0,
        (micros(tcp) - micros(base)) / 1000.0,
        (micros(none) - micros(base)) / 1000.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}
