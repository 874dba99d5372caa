//! File output off the forwarding thread. Writing a small file on this
//! machine's ext4 disk sometimes blocks for up to a second (journal commits);
//! done in the event loop, that stalled every link: packets sat in the RX ring
//! and pings of a verification burst were lost. The loop now only hands bytes
//! to this thread and never waits on a disk.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

enum Job {
    /// Append bytes to the file opened as this id.
    Append(usize, Vec<u8>),
    /// Replace a whole file atomically (write a temporary, rename over).
    Replace(String, String),
    /// Everything sent before this is written; end the thread.
    Stop,
}

/// Appends to one registered file from wherever its owner lives.
pub struct Appender {
    tx: Sender<Job>,
    id: usize,
}

impl Appender {
    pub fn append(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            let _ = self.tx.send(Job::Append(self.id, bytes));
        }
    }
}

/// The handle the event loop keeps; cheap to call, never blocks on I/O.
/// The files the writer thread has open (path, file; None once closed), shared with its owner.
type OpenFiles = Arc<Mutex<Vec<(String, Option<File>)>>>;

pub struct Writer {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    files: OpenFiles,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Writer {
    pub fn start() -> Writer {
        let (tx, rx) = channel();
        let files: OpenFiles = Arc::default();
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let (f, e) = (files.clone(), errors.clone());
        let thread = std::thread::Builder::new()
            .name("mml-writer".into())
            .spawn(move || serve(rx, f, e))
            .expect("spawning the writer thread");
        Writer { tx: Some(tx), thread: Some(thread), files, errors }
    }

    /// Register a file already created (and its header written) by the caller.
    pub fn register(&self, path: &str, file: File) -> Appender {
        let mut files = self.files.lock().unwrap();
        files.push((path.to_string(), Some(file)));
        Appender { tx: self.tx.clone().expect("writer already finished"), id: files.len() - 1 }
    }

    pub fn replace(&self, path: &str, contents: String) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job::Replace(path.to_string(), contents));
        }
    }

    /// The first write error so far, if any (reported once).
    pub fn take_error(&self) -> Option<String> {
        let mut e = self.errors.lock().unwrap();
        (!e.is_empty()).then(|| e.remove(0))
    }

    /// Write everything handed over so far and stop the thread.
    pub fn finish(&mut self) -> Result<(), String> {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Job::Stop);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.take_error().map_or(Ok(()), Err)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn serve(rx: Receiver<Job>, files: OpenFiles, errors: Arc<Mutex<Vec<String>>>) {
    let fail = |msg: String| errors.lock().unwrap().push(msg);
    let mut stop = false;
    while !stop {
        let Ok(first) = rx.recv() else { break };
        // Take what queued up meanwhile: logs in order, only the newest version
        // of a replaced file (an older statistics snapshot is not worth a write).
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let mut newest: HashMap<String, String> = HashMap::new();
        for job in batch {
            match job {
                Job::Append(id, bytes) => {
                    let mut f = files.lock().unwrap();
                    let (path, file) = &mut f[id];
                    if let Some(w) = file {
                        if let Err(e) = w.write_all(&bytes) {
                            fail(format!("writing log {path}: {e}"));
                            *file = None;
                        }
                    }
                }
                Job::Replace(path, contents) => {
                    newest.insert(path, contents);
                }
                Job::Stop => stop = true,
            }
        }
        for (path, contents) in newest {
            let tmp = format!("{path}.tmp");
            if std::fs::write(&tmp, contents).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_in_order_and_keeps_the_newest_replacement() {
        let dir = std::env::temp_dir().join(format!("mml-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log").to_string_lossy().into_owned();
        let stats = dir.join("stats").to_string_lossy().into_owned();
        let mut w = Writer::start();
        let a = w.register(&log, File::create(&log).unwrap());
        for i in 0..1000 {
            a.append(format!("{i}\n").into_bytes());
            w.replace(&stats, format!("{i}"));
        }
        w.finish().unwrap();
        let lines: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(String::from).collect();
        assert_eq!(lines, (0..1000).map(|i| i.to_string()).collect::<Vec<_>>());
        assert_eq!(std::fs::read_to_string(&stats).unwrap(), "999");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
