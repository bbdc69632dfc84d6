//! When to look at the served folders again: on the platform's change notifications
//! (`notify`: inotify, FSEvents, kqueue), or every second where they cannot be had
//! (a watch limit reached, a file system without them).
//!
//! A notification only says "look again": the registry's rescan decides what changed
//! (size and modification time), so a spurious event costs one rescan and a burst of
//! events (an editor saving, a checkout) is one rescan after it settles.
//!
//! A listing does not wait for a notification: a change made just before the request
//! may not have been notified yet, so the folders are looked at first
//! ([`before_listing`]), and every change made before the request is in the list.

use std::path::Path;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::Server;
use crate::discovery::registry::Sources;

/// How often the folders are walked when notifications are unavailable.
const POLL_EVERY: Duration = Duration::from_secs(1);

/// How long events are gathered before one rescan: a file being written is usually
/// complete by then, and a change is still seen well within a second.
const SETTLE: Duration = Duration::from_millis(50);

/// How long a server runs before its folders are watched. A session that lists and
/// ends at once (a client, or a gateway such as `lcp export`, listing its servers) then
/// never makes a watch, whose release at exit waits for the kernel's grace period
/// (about 15 ms for inotify); the rescan once the watch is set up sees a change made
/// before it, and a call checks its tool's file itself (`mcp::call`).
const WATCH_AFTER: Duration = Duration::from_millis(250);

/// Rescans `server`'s registry whenever its sources change, for as long as it runs.
pub async fn watch(server: Server) {
    tokio::time::sleep(WATCH_AFTER).await;
    let sources = server.registry().sources().clone();
    let (wake, mut woken) = mpsc::channel::<()>(1);
    // An MCP server's `list_changed` wakes a rescan too, which lists it again.
    if let Some(upstreams) = server.upstreams() {
        let wake = wake.clone();
        upstreams.on_change(move || {
            let _ = wake.try_send(());
        });
    }
    let watcher = match notifications(&sources, wake) {
        Ok(watcher) => watcher,
        Err(err) => {
            eprintln!("lcp: no change notifications ({err}); served folders are checked every second");
            return poll(server).await;
        }
    };
    server.set_notified();
    // A change between the first read and the watch being set up is not missed.
    server.rescan().await;
    while woken.recv().await.is_some() {
        server.set_change_pending(true);
        tokio::time::sleep(SETTLE).await;
        while woken.try_recv().is_ok() {}
        server.rescan().await;
        server.set_change_pending(false);
    }
    drop(watcher);
}

/// Before a listing (tools, prompts, resources, templates): the served folders as they
/// are now. A rescan the watcher has begun is waited for, then the folders are looked
/// at (a walk and a `stat` per file when nothing changed; only changed files are read),
/// since a change may be made a moment before the request and notified after it.
pub(super) async fn before_listing(server: &Server) {
    server.settled().await;
    server.rescan().await;
}

async fn poll(server: Server) {
    let mut tick = tokio::time::interval(POLL_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        server.rescan().await;
    }
}

/// A watcher of every source folder (recursively, links followed) and of the folder
/// of every explicit file (a file replaced by a rename is a new inode), which sends
/// on `wake` after any event but a read.
fn notifications(sources: &Sources, wake: mpsc::Sender<()>) -> notify::Result<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Rescans open files and folders: their reads must not wake the next one.
        if matches!(&event, Ok(event) if matches!(event.kind, EventKind::Access(_))) {
            return;
        }
        // A full channel already holds a wake-up.
        let _ = wake.try_send(());
    })?;
    for folder in &sources.folders {
        watcher.watch(folder, RecursiveMode::Recursive)?;
    }
    for file in &sources.files {
        let folder = file.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
        watcher.watch(folder, RecursiveMode::NonRecursive)?;
    }
    Ok(watcher)
}
