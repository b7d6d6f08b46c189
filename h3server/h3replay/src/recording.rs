//! A recording loaded into memory (format: schemas/recording.schema.json).
//!
//! Same checks and messages as testbed/recording.py: the manifest is
//! validated against the schema, then every referenced body must be a
//! regular file in bodies/ (neither bodies/ nor the body followed if a
//! symbolic link), have the recorded size and hash to its name (SHA-256).
//! A body is at most 256 MiB and the bodies 1 GiB in all (`limits`, the
//! schema's maxima), checked on the files before a byte is read.
//! Errors name the file and the key. The testbed's Python loader checks a
//! recording (and more rules) before it starts this server; these checks
//! keep the server safe when it is started by hand.

use std::collections::HashMap;
use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::matching;

/// The format's single definition, shared with the Python side.
pub const SCHEMA: &str = include_str!("../../../schemas/recording.schema.json");

/// A bad recording: one line naming the file and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

#[derive(Debug, Deserialize)]
struct Manifest {
    name: String,
    exchanges: Vec<RawExchange>,
}

#[derive(Debug, Deserialize)]
struct RawExchange {
    scheme: String,
    host: String,
    method: String,
    target: String,
    status: u16,
    response_headers: Vec<(String, String)>,
    body: Option<String>,
    body_size: Option<u64>,
}

/// One recorded exchange, ready to answer with.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub key: matching::Key,
    pub status: u16,
    /// Lower-case names, in recorded order.
    pub response_headers: Vec<(String, String)>,
    /// The body as sent on the wire (shared between exchanges with the same hash).
    pub body: Arc<[u8]>,
}

#[derive(Debug)]
pub struct Recording {
    pub path: PathBuf,
    pub name: String,
    pub exchanges: Vec<Exchange>,
    pub index: matching::Index,
    /// Distinct body bytes held in memory.
    pub body_bytes: usize,
}

impl Recording {
    /// The exchange answering a request, or None for a miss.
    pub fn find(&self, req: &matching::Request) -> Option<&Exchange> {
        self.index.find(req).map(|i| &self.exchanges[i])
    }
}

/// The largest manifest.json read, bytes (as the Python loader).
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// The schema, parsed once.
fn schema() -> &'static serde_json::Value {
    static SCHEMA_VALUE: OnceLock<serde_json::Value> = OnceLock::new();
    SCHEMA_VALUE
        .get_or_init(|| serde_json::from_str(SCHEMA).expect("embedded schema is valid JSON"))
}

/// The largest body a recording may hold and the largest sum of its bodies, in
/// bytes: the schema's maxima of `body_size` and `bytes`, the one definition of
/// both (the Python loader reads the same). Checked on the files themselves too,
/// before a byte of a body is read: a manifest may state less than its files hold.
pub fn limits() -> (u64, u64) {
    let max = |pointer: &str| {
        schema()
            .pointer(pointer)
            .and_then(serde_json::Value::as_u64)
            .expect("the schema states the limit")
    };
    (
        max("/properties/exchanges/items/properties/body_size/maximum"),
        max("/properties/bytes/maximum"),
    )
}

/// Load, validate and read every body of the recording in `dir`.
///
/// The folder is opened once and every file of it is opened relative to that
/// descriptor, none followed if a symbolic link: `dir` may be `/proc/self/fd/N`,
/// a folder the testbed opened and checked and passed down, and what is read is
/// that folder whatever its path leads to meanwhile.
pub fn load(dir: &Path) -> Result<Recording, LoadError> {
    let manifest_path = dir.join("manifest.json");
    let m = manifest_path.display();
    let top = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| {
            LoadError(format!(
                "{}: cannot open the recording folder: {e}",
                dir.display()
            ))
        })?;
    let text = read_manifest(&top).map_err(|why| LoadError(format!("{m}: {why}")))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| LoadError(format!("{m}: not valid JSON: {e}")))?;
    validate(&value).map_err(|(key, msg)| LoadError(format!("{m}: key {key}: {msg}")))?;
    let manifest: Manifest =
        serde_json::from_value(value).map_err(|e| LoadError(format!("{m}: {e}")))?;

    let (max_body, max_total) = limits();
    let mut bodies_dir: Option<File> = None;
    let mut total: u64 = 0;
    let mut bodies: HashMap<String, Arc<[u8]>> = HashMap::new();
    let empty: Arc<[u8]> = Arc::from(Vec::new());
    let mut exchanges = Vec::with_capacity(manifest.exchanges.len());
    for (i, x) in manifest.exchanges.into_iter().enumerate() {
        let body = match &x.body {
            None => empty.clone(),
            Some(sha) => match bodies.get(sha) {
                Some(b) => b.clone(),
                None => {
                    let key = format!("{m}: key exchanges/{i}/body: bodies/{sha}");
                    let folder = match &bodies_dir {
                        Some(f) => f,
                        None => bodies_dir.insert(
                            open_bodies(&top, dir)
                                .map_err(|why| LoadError(format!("{key} {why}")))?,
                        ),
                    };
                    let mut file = open_regular(folder, sha)
                        .map_err(|why| LoadError(format!("{key} {why}")))?;
                    let size = file
                        .metadata()
                        .map_err(|e| LoadError(format!("{key} cannot be read: {e}")))?
                        .len();
                    if size > max_body {
                        return Err(LoadError(format!(
                            "{key} has {size} bytes, expected at most {max_body} (the largest body a recording may hold)"
                        )));
                    }
                    if let Some(stated) = x.body_size {
                        if stated != size {
                            return Err(LoadError(format!(
                                "{m}: key exchanges/{i}/body_size: {stated}, but bodies/{sha} has {size} bytes"
                            )));
                        }
                    }
                    total += size;
                    if total > max_total {
                        return Err(LoadError(format!(
                            "{key} brings the bodies to {total} bytes, expected at most {max_total} in all"
                        )));
                    }
                    let data = read_exactly(&mut file, size)
                        .map_err(|why| LoadError(format!("{key} {why}")))?;
                    if hex(&Sha256::digest(&data)) != *sha {
                        return Err(LoadError(format!(
                            "{key} does not hash to its name (expected the SHA-256 of its bytes)"
                        )));
                    }
                    let b: Arc<[u8]> = Arc::from(data);
                    bodies.insert(sha.clone(), b.clone());
                    b
                }
            },
        };
        if let Some(size) = x.body_size {
            if x.body.is_some() && size != body.len() as u64 {
                return Err(LoadError(format!(
                    "{m}: key exchanges/{i}/body_size: {size}, but bodies/{} has {} bytes",
                    x.body.as_deref().unwrap_or(""),
                    body.len()
                )));
            }
        }
        exchanges.push(Exchange {
            key: matching::Key {
                scheme: x.scheme,
                host: x.host,
                method: x.method,
                target: x.target,
            },
            status: x.status,
            response_headers: x.response_headers,
            body,
        });
    }
    let index = matching::Index::new(exchanges.iter().map(|x| &x.key));
    Ok(Recording {
        path: dir.to_path_buf(),
        name: manifest.name,
        body_bytes: bodies.values().map(|b| b.len()).sum(),
        exchanges,
        index,
    })
}

/// `name` in the folder `dir`, opened without following a symbolic link (and
/// without waiting on a FIFO: O_NONBLOCK, for files).
fn open_at(dir: &File, name: &str, flags: libc::c_int) -> std::io::Result<File> {
    let name = CString::new(name).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: a descriptor this function's caller keeps open and a NUL-terminated
    // name; a descriptor returned is owned by the File made of it, and by nothing else.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// A regular file `name` in `dir` (not a symbolic link, FIFO or device). Err: why
/// not, as the end of a sentence naming the file.
fn open_regular(dir: &File, name: &str) -> Result<File, String> {
    let file =
        open_at(dir, name, libc::O_NONBLOCK).map_err(|e| match (e.kind(), e.raw_os_error()) {
            (std::io::ErrorKind::NotFound, _) => "is missing".to_string(),
            (_, Some(libc::ELOOP)) => "is a symbolic link, expected a regular file".to_string(),
            _ => format!("cannot be read: {e}"),
        })?;
    let kind = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?
        .file_type();
    if !kind.is_file() || kind.is_fifo() {
        return Err("is not a regular file".into());
    }
    Ok(file)
}

/// manifest.json in the folder `top`, at most MAX_MANIFEST_BYTES of UTF-8 text.
fn read_manifest(top: &File) -> Result<String, String> {
    use std::io::Read;

    let file = open_regular(top, "manifest.json").map_err(|why| match why.as_str() {
        "is missing" => "missing (not a recording folder)".to_string(),
        _ => format!("the manifest {why}"),
    })?;
    let size = file
        .metadata()
        .map_err(|e| format!("cannot read: {e}"))?
        .len();
    if size > MAX_MANIFEST_BYTES {
        return Err(format!(
            "{size} bytes, expected at most {MAX_MANIFEST_BYTES}"
        ));
    }
    let mut text = String::new();
    file.take(MAX_MANIFEST_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read: {e}"))?;
    Ok(text)
}

/// bodies/ in the folder `top` (`dir`), not followed if a symbolic link.
fn open_bodies(top: &File, dir: &Path) -> Result<File, String> {
    open_at(top, "bodies", libc::O_DIRECTORY).map_err(|e| {
        let link = std::fs::symlink_metadata(dir.join("bodies"))
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if link {
            "is in a bodies/ that is a symbolic link, expected a folder".to_string()
        } else if e.kind() == std::io::ErrorKind::NotFound {
            "is missing".to_string()
        } else {
            format!("is in a bodies/ that cannot be opened: {e}")
        }
    })
}

/// Exactly `size` bytes of `file` (its size when checked), in one allocation of
/// that size; Err if it holds another number by now.
fn read_exactly(file: &mut File, size: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;

    let mut data = Vec::with_capacity(size as usize);
    file.take(size + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if data.len() as u64 != size {
        return Err(format!(
            "changed while read ({size} bytes, then {})",
            data.len()
        ));
    }
    Ok(data)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Validate a manifest against the schema: Err((key, message)) for the first
/// violation, the key as a slash-separated path like the Python loader's.
pub fn validate(manifest: &serde_json::Value) -> Result<(), (String, String)> {
    let validator = jsonschema::validator_for(schema()).expect("embedded schema compiles");
    match validator.validate(manifest) {
        Ok(()) => Ok(()),
        Err(e) => {
            let path = e
                .instance_path()
                .as_str()
                .trim_start_matches('/')
                .to_string();
            let key = if path.is_empty() {
                "(top level)".to_string()
            } else {
                path
            };
            let msg = match e.kind() {
                jsonschema::error::ValidationErrorKind::Maximum { limit } => {
                    format!("expected at most {limit}, got {}", e.instance())
                }
                _ => e.to_string(),
            };
            Err((key, msg))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// SHA-256 of b"hello", the test body.
    const HELLO: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    fn manifest() -> serde_json::Value {
        json!({
            "format": "testbed-recording/1",
            "name": "t",
            "url": "https://a.test/",
            "recorded_at": "2024-01-01T00:00:00Z",
            "loads": 1,
            "origins": [{"scheme": "https", "host": "a.test", "port": 443, "ip": "192.0.2.1"}],
            "exchanges": [{
                "scheme": "https", "host": "a.test", "port": 443, "ip": "192.0.2.1",
                "method": "GET", "target": "/", "request_headers": [],
                "status": 200, "response_headers": [["content-type", "text/html"]],
                "body": HELLO, "body_size": 5
            }],
            "requests": 1,
            "bytes": 5
        })
    }

    fn write(dir: &Path, m: &serde_json::Value, body: Option<&[u8]>) {
        std::fs::create_dir_all(dir.join("bodies")).unwrap();
        std::fs::write(dir.join("manifest.json"), m.to_string()).unwrap();
        if let Some(b) = body {
            std::fs::write(dir.join("bodies").join(HELLO), b).unwrap();
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("h3server-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn valid_manifest_passes() {
        assert_eq!(validate(&manifest()), Ok(()));
    }

    #[test]
    fn error_names_the_key() {
        let mut m = manifest();
        m["exchanges"][0]["status"] = json!(700);
        let (key, _) = validate(&m).unwrap_err();
        assert_eq!(key, "exchanges/0/status");
        let mut m = manifest();
        m.as_object_mut().unwrap().remove("loads");
        let (key, msg) = validate(&m).unwrap_err();
        assert_eq!(key, "(top level)");
        assert!(msg.contains("loads"), "{msg}");
        let mut m = manifest();
        m["exchanges"][0]["response_headers"] = json!([["Content-Type", "x"]]);
        assert_eq!(
            validate(&m).unwrap_err().0,
            "exchanges/0/response_headers/0/0"
        );
    }

    #[test]
    fn loads_bodies_into_memory() {
        let d = tmp("ok");
        write(&d, &manifest(), Some(b"hello"));
        let r = load(&d).unwrap();
        assert_eq!(r.name, "t");
        assert_eq!(&*r.exchanges[0].body, b"hello");
        assert_eq!(r.body_bytes, 5);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The error loading the test manifest gives when its body file holds
    /// `body` (None: there is none), the folder's path written as DIR.
    fn body_error(name: &str, body: Option<&[u8]>) -> String {
        body_error_after(name, body, |_| {})
    }

    /// The same after `prepare` has changed the folder.
    fn body_error_after(name: &str, body: Option<&[u8]>, prepare: impl FnOnce(&Path)) -> String {
        let d = tmp(name);
        write(&d, &manifest(), body);
        prepare(&d);
        let e = load(&d).unwrap_err().0;
        std::fs::remove_dir_all(&d).unwrap();
        e.replacen(&d.display().to_string(), "DIR", 1)
    }

    #[test]
    fn missing_body_is_named() {
        let e = body_error("missing", None);
        assert_eq!(
            e,
            format!("DIR/manifest.json: key exchanges/0/body: bodies/{HELLO} is missing")
        );
    }

    #[test]
    fn wrong_body_size_is_named() {
        let e = body_error("size", Some(b"hello!"));
        assert_eq!(
            e,
            format!(
                "DIR/manifest.json: key exchanges/0/body_size: 5, but bodies/{HELLO} has 6 bytes"
            )
        );
    }

    #[test]
    fn tampered_body_is_refused() {
        let e = body_error("tampered", Some(b"HELLO"));
        let why = "does not hash to its name (expected the SHA-256 of its bytes)";
        assert_eq!(
            e,
            format!("DIR/manifest.json: key exchanges/0/body: bodies/{HELLO} {why}")
        );
    }

    #[test]
    fn symlinked_body_and_bodies_are_not_followed() {
        let e = body_error_after("symlink", None, |d| {
            let outside = d.join("outside");
            std::fs::write(&outside, b"hello").unwrap(); // even the right bytes
            std::os::unix::fs::symlink(&outside, d.join("bodies").join(HELLO)).unwrap();
        });
        let why = "is a symbolic link, expected a regular file";
        assert_eq!(
            e,
            format!("DIR/manifest.json: key exchanges/0/body: bodies/{HELLO} {why}")
        );
        let e = body_error_after("symlink", None, |d| {
            std::fs::remove_dir_all(d.join("bodies")).unwrap();
            std::fs::create_dir_all(d.join("real")).unwrap();
            std::fs::write(d.join("real").join(HELLO), b"hello").unwrap();
            std::os::unix::fs::symlink(d.join("real"), d.join("bodies")).unwrap();
        });
        let why = "is in a bodies/ that is a symbolic link, expected a folder";
        assert_eq!(
            e,
            format!("DIR/manifest.json: key exchanges/0/body: bodies/{HELLO} {why}")
        );
    }

    #[test]
    fn fifo_body_is_not_waited_on() {
        let e = body_error_after("fifo", None, |d| {
            let path =
                std::ffi::CString::new(d.join("bodies").join(HELLO).as_os_str().as_encoded_bytes())
                    .unwrap();
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        });
        assert_eq!(
            e,
            format!(
                "DIR/manifest.json: key exchanges/0/body: bodies/{HELLO} is not a regular file"
            )
        );
    }

    #[test]
    fn limits_are_the_schemas() {
        assert_eq!(limits(), (256 << 20, 1 << 30));
        let mut m = manifest();
        m["exchanges"][0]["body_size"] = json!((256 << 20) + 1);
        let (key, msg) = validate(&m).unwrap_err();
        assert_eq!(key, "exchanges/0/body_size");
        assert!(msg.starts_with("expected at most 268435456, got "), "{msg}");
    }

    #[test]
    fn body_file_above_the_limit_is_refused_before_it_is_read() {
        // A sparse file: the manifest says 5 bytes, the file holds 300 MiB.
        let e = body_error_after("huge", Some(b"hello"), |d| {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(d.join("bodies").join(HELLO))
                .unwrap();
            f.set_len(300 << 20).unwrap();
        });
        assert_eq!(
            e,
            format!(
                "DIR/manifest.json: key exchanges/0/body: bodies/{HELLO} has 314572800 bytes, expected at most 268435456 (the largest body a recording may hold)"
            )
        );
    }

    #[test]
    fn symlinked_manifest_is_not_followed() {
        let d = tmp("manifest-link");
        write(&d, &manifest(), Some(b"hello"));
        std::fs::rename(d.join("manifest.json"), d.join("real.json")).unwrap();
        std::os::unix::fs::symlink(d.join("real.json"), d.join("manifest.json")).unwrap();
        let e = load(&d).unwrap_err().0;
        std::fs::remove_dir_all(&d).unwrap();
        assert!(
            e.ends_with("manifest.json: the manifest is a symbolic link, expected a regular file"),
            "{e}"
        );
    }

    #[test]
    fn an_open_folder_is_read_through_proc_self_fd() {
        let d = tmp("by-fd");
        write(&d, &manifest(), Some(b"hello"));
        let folder = File::open(&d).unwrap();
        let moved = d.with_extension("moved");
        std::fs::rename(&d, &moved).unwrap();
        std::fs::create_dir_all(&d).unwrap(); // another folder in its place
        let r = load(Path::new(&format!("/proc/self/fd/{}", folder.as_raw_fd()))).unwrap();
        assert_eq!(&*r.exchanges[0].body, b"hello");
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&moved).unwrap();
    }

    #[test]
    fn not_a_recording() {
        let d = tmp("empty");
        std::fs::create_dir_all(&d).unwrap();
        assert!(load(&d)
            .unwrap_err()
            .0
            .ends_with("manifest.json: missing (not a recording folder)"));
        std::fs::write(d.join("manifest.json"), "{").unwrap();
        assert!(load(&d).unwrap_err().0.contains("not valid JSON"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
