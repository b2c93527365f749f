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
        let returned = unsafe { libc::wait4(pid as libc::pid_t, &mut status, flags, &mut usage) };
        if returned == 0 {
            return Ok(None);
        }
        if returned < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
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

/// Waits for `pid` to end without reaping it (`block`: until it does;
/// else `false` while it runs). Its zombie keeps its pid — and so the
/// number of its process group — reserved until [`reap`]: a group killed
/// between the two can only be its own, never a stranger's that was given
/// the number after the leader was reaped.
pub(crate) fn ended(pid: u32, block: bool) -> std::io::Result<bool> {
    let mut flags = libc::WEXITED | libc::WNOWAIT;
    if !block {
        flags |= libc::WNOHANG;
    }
    loop {
        // SAFETY: `siginfo_t` is plain data for which all-zero bytes are
        // valid; the pointer is to a live, writable local.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let returned = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if returned < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        // With WNOHANG and the child still running, waitid returns 0 and
        // leaves si_pid 0.
        // SAFETY: reading the pid field of a siginfo waitid filled (or zeroed).
        return Ok(unsafe { info.si_pid() } != 0);
    }
}

/// Sends SIGKILL to every process of the group `pgid` (a group already
/// gone is not an error). Call it while the group's leader is unreaped
/// ([`ended`]), so the number still names that group.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The leader ended but unreaped is a zombie: its pid still answers
    /// signal 0 and still names its group, so the group's other members
    /// are killed by that number and nobody else can be; only `reap`
    /// frees it.
    #[test]
    // Reaped by `reap` (wait4), not by `Child::wait`.
    #[allow(clippy::zombie_processes)]
    fn an_ended_leader_keeps_its_group_number_until_it_is_reaped() {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & exit 0"])
            .process_group(0)
            .spawn()
            .expect("sh");
        let pid = child.id();
        assert!(ended(pid, true).expect("waitid"));
        // SAFETY: plain integers; signal 0 only checks that the target exists.
        let alive = |target: libc::pid_t| unsafe { libc::kill(target, 0) } == 0;
        assert!(alive(pid as libc::pid_t), "the zombie keeps its pid");
        assert!(
            alive(-(pid as libc::pid_t)),
            "the group still has its sleep"
        );
        kill_group(pid);
        let reaped = reap(pid, true).expect("wait4").expect("reaped");
        assert_eq!(reaped.code, Some(0));
        assert!(!alive(pid as libc::pid_t), "reaped: the pid is free");
        // The sleep was killed (it is init's to reap now): within a few
        // seconds nothing of the group is left.
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            !alive(-(pid as libc::pid_t))
        });
        assert!(gone, "the group's other member outlived the kill");
    }
}
