//! Execution: threads and backend (`--threads`, `--backend`), MPI processes, the element type (`--dtype`).

use super::*;
use clustr::Backend as _;

// Execution options: threads and backend.
#[derive(clap::Args, Clone, Debug)]
pub struct ExecArgs {
    /// Worker threads (0 = one per core; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub threads: u16,
    /// Compute backend: auto, cpu or cuda (feature `cuda`; auto = the GPU when one is usable).
    /// On CUDA: distance matrices, the assignments of kmeans, minibatch-kmeans and CLARA on
    /// points, the swap scans of fastpam1, fastpam2 and fasterpam, and rff-kpkm and
    /// power-kmeans; the other methods run on the CPU and refuse cuda.
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
}

/// Where a run's work ran: the JSON's `backend` and `threads`.
#[derive(Clone, Copy, Debug)]
pub struct Ran {
    pub backend: &'static str,
    pub threads: usize,
}

impl ExecArgs {
    /// Runs `f` for `method` (a subcommand) on a thread pool of the requested size with the
    /// backend it runs on; returns its result and where it ran.
    pub fn run<T: Send>(
        &self,
        method: &str,
        f: impl FnOnce(&AnyBackend) -> CliResult<T> + Send,
    ) -> CliResult<(T, Ran)> {
        let backend = self.backend_for(method)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads.into())
            .build()
            .map_err(|e| CliError {
                code: 1,
                message: format!("cannot start {} threads: {e}", self.threads),
            })?;
        let ran = Ran {
            backend: backend.name(),
            threads: pool.current_num_threads(),
        };
        let out = pool.install(|| f(&backend))?;
        Ok((out, ran))
    }

    /// The backend `method` runs on (`clustr::methods::Method::backend`); a tool that is no
    /// method, such as `distances`, runs on the one asked for.
    fn backend_for(&self, method: &str) -> CliResult<AnyBackend> {
        Ok(match clustr::methods::method(method) {
            Some(m) => m.backend(self.backend)?,
            None => self.backend.resolve()?,
        })
    }
}

/// How a subcommand runs: as one process, or (`--distributed`) as one process of an MPI job
/// started by `mpirun` / `srun`, which needs clustr built with the `mpi` feature.
pub struct Processes {
    pub comm: clustr::comm::SharedComm,
    distributed: bool,
}

impl Processes {
    pub fn new(distributed: bool) -> CliResult<Self> {
        let comm = if distributed {
            mpi_world()?
        } else {
            clustr::comm::single_process()
        };
        Ok(Processes { comm, distributed })
    }

    /// The input points: all of them, or in a distributed run this process's slice of the
    /// rows of a .npy file or a folder of .npy shards (it reads only those); errors name the
    /// file. (A distributed fit checks the values itself, with every process agreeing.)
    pub fn load<F: Scalar>(&self, path: &Path) -> CliResult<Array2<F>> {
        if !self.distributed && !path.is_dir() {
            return load_points(path);
        }

        let rows = self.rows(path)?;
        let x = rows
            .rows::<F>(0, rows.nrows())
            .map_err(|e| CliError::from(e).prefixed(path))?;
        if !self.distributed {
            check_points(x.view()).map_err(|e| CliError::from(e).prefixed(path))?;
        }
        Ok(x)
    }

    /// The rows this process reads, unread yet: a .npy file or a folder of .npy shards (in
    /// file-name order), in a distributed run this process's contiguous slice of them.
    pub fn rows(&self, path: &Path) -> CliResult<NpyRows> {
        refuse_points_options("a streamed .npy, --distributed or a folder of shards")?;
        if !path.is_dir() && clustr::data::FileKind::of(path)? != clustr::data::FileKind::Npy {
            return Err(CliError::usage(format!(
                "{}: a distributed run reads its rows from a .npy file or a folder of .npy shards",
                path.display()
            )));
        }
        let rows = NpyRows::open(path)?;
        let slice = self.comm.row_range(rows.total_rows());
        Ok(rows.window(slice)?)
    }

    /// All the labels, in row order, on the process that writes and reports (rank 0); `None`
    /// on the others.
    pub fn gather_labels(&self, local: Vec<i64>) -> Option<Vec<i64>> {
        if !self.distributed {
            return Some(local);
        }
        clustr::comm::gather_labels(&local, 0, &*self.comm)
    }
}

/// A model reported with other labels: those of every process, gathered.
pub struct WithLabels<'a> {
    pub model: &'a dyn clustr::Clustering,
    pub labels: Vec<i64>,
}

impl clustr::Clustering for WithLabels<'_> {
    fn labels(&self) -> &[i64] {
        &self.labels
    }
    fn loss(&self) -> Option<f64> {
        self.model.loss()
    }
    fn n_iter(&self) -> usize {
        self.model.n_iter()
    }
    fn converged(&self) -> bool {
        self.model.converged()
    }
}

fn mpi_world() -> CliResult<clustr::comm::SharedComm> {
    #[cfg(feature = "mpi")]
    {
        Ok(std::sync::Arc::new(clustr::comm::Mpi::init()?))
    }
    #[cfg(not(feature = "mpi"))]
    {
        Err(CliError::usage(
            "--distributed needs clustr built with the mpi feature (cargo build --release --features mpi)",
        ))
    }
}

/// The element type a subcommand computes in (`--dtype`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// 32-bit floats.
    #[value(alias = "float32")]
    F32,
    /// 64-bit floats.
    #[value(alias = "float64")]
    F64,
}
