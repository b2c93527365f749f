//! The one place in ratchet that calls the operating system directly:
//! resource limits set in the child between fork and exec, `wait4` for a
//! child's exit status with its resource usage, and signals to a process
//! group. Everything else in the workspace forbids `unsafe`; each block here
//! states why it is sound.
#![allow(unsafe_code)]

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Resource limits for a child, applied with `setrlimit` after fork and
/// before exec (both soft and hard, so the command cannot raise them).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RLimits {
    pub cpu_seconds: Option<u64>,
    pub address_space: Option<u64>,
    pub file_size: Option<u64>,
    pub processes: Option<u64>,
}

/// Arranges for `limits` to be set in the child (and no core files).
pub(crate) fn set_limits(command: &mut Command, limits: RLimits) {
    let list: Vec<_> = [
        (libc::RLIMIT_CPU, limits.cpu_seconds),
        (libc::RLIMIT_AS, limits.address_space),
        (libc::RLIMIT_FSIZE, limits.file_size),
        (libc::RLIMIT_NPROC, limits.processes),
        (libc::RLIMIT_CORE, Some(0)),
    ]
    .into_iter()
    .filter_map(|(r, v)| v.map(|v| (r, v)))
    .collect();
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe functions may be called. It calls `setrlimit` only
    // (async-signal-safe per POSIX), reads `list` (allocated before the fork,
    // never freed or allocated in the child) and builds the error from the
    // OS error code without allocating.
    unsafe {
        command.pre_exec(move || {
            for &(resource, value) in &list {
                let rl = libc::rlimit {
                    rlim_cur: value as libc::rlim_t,
                    rlim_max: value as libc::rlim_t,
                };
                if libc::setrlimit(resource, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// How a child ended, with what it used.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reaped {
    /// `Some(code)` if it exited.
    pub code: Option<i32>,
    /// `Some(signal)` if a signal ended it.
    pub signal: Option<i32>,
    /// User plus system CPU time, its waited-for descendants included.
    pub cpu_ms: f64,
    /// Peak resident set size in KiB (the largest of it and its waited-for descendants).
    pub peak_rss_kib: u64,
}

/// Reaps `pid` if it has ended (`block`: waits until it does).
pub(crate) fn reap(pid: u32, block: bool) -> std::io::Result<Option<Reaped>> {
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain data for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: both pointers are to live, writable locals of the right types.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, flags, &mut usage) };
        if r == 0 {
            return Ok(None);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let tv_ms = |tv: libc::timeval| tv.tv_sec as f64 * 1e3 + tv.tv_usec as f64 / 1e3;
        return Ok(Some(Reaped {
            code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            cpu_ms: tv_ms(usage.ru_utime) + tv_ms(usage.ru_stime),
            peak_rss_kib: usage.ru_maxrss.max(0) as u64,
        }));
    }
}

/// Sends SIGKILL to every process of the group `pgid` (a group already
/// gone is not an error).
pub(crate) fn kill_group(pgid: u32) {
    // SAFETY: `killpg` takes plain integers; a wrong group only fails with ESRCH.
    // Group 0 or 1 would mean "our own group" / init: never passed (a child's
    // pid is at least 2), but refused here all the same.
    if pgid > 1 {
        unsafe {
            libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
        }
    }
}
