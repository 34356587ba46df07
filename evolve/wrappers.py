"""The command a launch line's wrappers run: `nohup`, `timeout 5`, `env -i A=1`, `tini --`,
`dumb-init`, `sudo -u x`, `kubectl exec POD --`, `docker run IMAGE`, `srun --gres gpu:8`,
`mpirun -np 4` and the like run the words after their own, and a shell given `-c` in any option cluster
(`sh -c`, `bash -lc`, `sh -ec`, `bash -o pipefail -c`), `su -c` or `sbatch --wrap` runs a
script. One table says, for each
wrapper, which of its options take a value and how many words of its own (operands) come
before the command, so every wrapper is unwrapped by the same getopt-style walk, wrappers
inside wrappers too (`tini -- sh -c '...'`).

Works on the words' text only: the caller maps the indices back to its own tokens."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

import attrs


@attrs.frozen
class Wrapper:
    """How a program that runs another command takes its own words."""

    valued: frozenset[str] = frozenset()  # its options that take a value (the next word, or the rest of the word)
    bare: frozenset[str] | None = None  # instead: the options that take none (every other takes a value)
    operands: int = 0  # its own words after its options: timeout's duration, docker run's image, su's user
    assignments: bool = False  # takes NAME=value words before the command (env, sudo)
    script: frozenset[str] = frozenset()  # options whose value is a shell script (`su -c SCRIPT`)
    shell: bool = False  # a shell: `-c` in an option cluster makes its first operand the script
    dashdash: bool = False  # the command is what follows `--` (`kubectl exec POD -- CMD`)
    pairs: frozenset[str] = frozenset()  # its options that take two values (`mpirun --mca btl self`)
    words: bool = False  # its options are whole words, one dash or two, never clusters (`mpirun -np 4`)

    def takes(self, option: str) -> bool:
        return option not in self.bare if self.bare is not None else option in self.valued


def _w(valued: str = "", *, operands: int = 0, assignments: bool = False, script: str = "",
       shell: bool = False) -> Wrapper:
    return Wrapper(frozenset(valued.split()), operands=operands, assignments=assignments,
                   script=frozenset(script.split()), shell=shell)


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
_SHELL = _w("-o +o -O +O --rcfile --init-file", shell=True)
# A shell's options that take the next word: each `o` or `O` of a cluster takes one, in
# order, wherever it stands in the cluster (`bash -euo pipefail SCRIPT`, `-oe pipefail`,
# `-oO pipefail extglob`), as bash, dash and zsh read their command line; and its long ones
_SHELL_VALUED_LETTERS = frozenset("oO")
_SHELL_VALUED_LONG = frozenset({"--rcfile", "--init-file"})


def shell_options(words: Sequence[str | None], start: int = 0) -> tuple[int, frozenset[str]]:
    """Walk a shell's options from `words[start]`: the index of its first operand (the
    script, or a `-c` command) and the letters its option clusters give (`c`: the operand
    is a command, `s`: the script comes on standard input). `-` and `--` end the options;
    a word not shown (None) is an operand."""
    letters: set[str] = set()
    i = start
    while i < len(words):
        text = words[i]
        if text is None:
            break
        i += 1
        if text in ("-", "--"):
            break
        if text.startswith("--"):
            i += 1 if text in _SHELL_VALUED_LONG else 0
            continue
        if len(text) < 2 or text[0] not in "-+":
            i -= 1
            break
        cluster = text[1:]
        letters.update(cluster if text[0] == "-" else "")
        i += sum(1 for letter in cluster if letter in _SHELL_VALUED_LETTERS)
    return min(i, len(words)), frozenset(letters)
_SU = _w("-s --shell -g --group -G --supp-group -w --whitelist-environment -u --user", operands=1,
         script="-c --command")
_KUBECTL = Wrapper(dashdash=True)


def _container(bare: str) -> Wrapper:
    """`docker run` and the like: too many options take a value to list, so the few that
    take none are listed; then the image (or container, or service), then the command."""
    return Wrapper(bare=frozenset(bare.split()), operands=1)


_DOCKER_RUN = _container("-d -i -t -P -q --rm --init --privileged --detach --interactive --tty --read-only "
                         "--publish-all --no-healthcheck --oom-kill-disable --sig-proxy --help")
_DOCKER_EXEC = _container("-d -i -t --detach --interactive --tty --privileged --help")
_COMPOSE = _container("-d -i -t -T -P --rm --detach --interactive --tty --no-TTY --no-deps --service-ports "
                      "--use-aliases --build --remove-orphans --quiet-pull --privileged --help")
# Slurm's srun, salloc and sbatch share one option table: nearly all of its ~150 options
# take a value (`--gres gpu:8`, `-N 2`), so the ones that take none, or only as
# `--option=VALUE` / `-KVALUE` (getopt's optional arguments), are listed, with the pyxis
# container plugin's (`--container-image IMAGE` takes one, `--container-writable` none).
_SLURM_BARE = (
    "--contiguous --debugger-test --disable-status --exact --help --hold --ignore-pbs --interactive --label "
    "--multi-prog --no-allocate --bell --no-bell --no-requeue --no-shell --overcommit --oversubscribe --parsable "
    "--preserve-env --quiet --quit-on-interrupt --reboot --requeue --spread-job --stepmgr --test-only --unbuffered "
    "--use-min-nodes --usage --verbose --version --whole "
    "--bcast --compress --exclusive --external-launcher --get-user-env --immediate --kill-command "
    "--kill-on-bad-exit --nice --no-kill --overlap --propagate --pty --resv-ports --send-libs --x11 "
    "-X -h -H -l -Z -O -s -E -Q -u -v -V -I -K -k "
    "--container-mount-home --no-container-mount-home --container-remap-root --no-container-remap-root "
    "--container-entrypoint --no-container-entrypoint --container-entrypoint-log --container-writable "
    "--container-readonly"
)
_SRUN = Wrapper(bare=frozenset(_SLURM_BARE.split()))  # salloc too: the command after its options
# sbatch runs its batch script file with the words after it, or `--wrap SCRIPT`; its `--wait` takes no value
_SBATCH = Wrapper(bare=frozenset([*_SLURM_BARE.split(), "--wait", "-W"]), script=frozenset({"--wrap"}))

# MPI's launchers run their command on local ranks that inherit the launcher's
# environment. Open MPI's (mpirun, mpiexec, orterun, prterun, oshrun) and MPICH's or
# Intel's hydra (mpiexec, mpiexec.hydra) take options as whole words with one dash or two
# (`-np 4`, `--map-by core`, `--mca btl self`, `-genv NAME 16`); the ones listed take a
# value, two for `pairs`; every other is taken to take none (`--oversubscribe`, `-genvall`).
_MPI_VALUED = (
    "n np c N npernode npersocket map-by rank-by bind-to H host hosts hostfile machinefile default-hostfile x "
    "wdir wd path prefix app output-filename stdin tune am report-uri ompi-server preload-files cpu-set "
    "cpu-list cpus-per-proc cpus-per-rank slot-list rf rankfile timeout launch-agent max-vm-size personality "
    "display output runtime-options pset initial-errhandler tmpdir forward-signals xterm stream-buffering "
    "report-pid dvm-uri f ppn perhost configfile launcher launcher-exec bootstrap bootstrap-exec "
    "rmk binding membind topolib ckpointlib ckpoint-prefix ckpoint-num demux iface nameserver errfile-pattern "
    "outfile-pattern prepend-pattern genvlist envlist gpus-per-proc usize localhost hosts-group trace"
)
_MPI_PAIRS = "mca gmca prtemca pmixmca omca genv env"


def _dashed(names: str) -> frozenset[str]:
    return frozenset(f"{dash}{name}" for name in names.split() for dash in ("-", "--"))


_MPI = Wrapper(_dashed(_MPI_VALUED), pairs=_dashed(_MPI_PAIRS), words=True)
# torch's elastic launcher (`torchrun`, `python -m torch.distributed.run`, the older
# `torch.distributed.launch`): every option takes a value but these flags; then the script
# it runs, or with `-m`/`--module` the module (`torchrun --nproc-per-node 8 -m
# sglang.launch_server ARGS`), whose words are the command's program words
_TORCHRUN = Wrapper(bare=frozenset({
    "-m", "--module", "--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--use-env",
    "--use_env", "--virtual-local-rank", "--virtual_local_rank", "-h", "--help",
}))
TORCH_LAUNCH_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
_PYTHON = re.compile(r"python[0-9.]*")
# the interpreter's own options that take the next word (`python -W ignore -m x`)
_PYTHON_VALUED = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_PYTHON_M = re.compile(r"-[bBdEiIOPqsSuv]*m")

_Table = Mapping[str, "Wrapper | _Table"]
_CONTAINERS: _Table = {
    "run": _DOCKER_RUN, "exec": _DOCKER_EXEC, "container": {"run": _DOCKER_RUN, "exec": _DOCKER_EXEC},
    "compose": {"run": _COMPOSE, "exec": _COMPOSE},
}

# program (its file name) -> how it takes its words; a mapping: by its subcommand (`docker run`)
WRAPPERS: _Table = {
    **dict.fromkeys(SHELLS, _SHELL),
    "env": _w("-u --unset -C --chdir", assignments=True),
    "nohup": _w(), "setsid": _w(), "time": _w(), "command": _w(), "builtin": _w(), "busybox": _w(),
    "exec": _w("-a"),
    "nice": _w("-n --adjustment"),
    "timeout": _w("-s --signal -k --kill-after", operands=1),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "taskset": _w(operands=1),
    "flock": _w("-w --timeout -E --conflict-exit-code", operands=1),  # its lock file, then the command
    "ionice": _w("-c --class -n --classdata"),
    "chrt": _w("-T --sched-runtime -P --sched-period -D --sched-deadline", operands=1),  # the priority
    "numactl": _w("-C -N -m -p -i --physcpubind --cpunodebind --membind --preferred --interleave"),
    "tini": _w("-p -e"), "dumb-init": _w("-r --rewrite"),
    "gosu": _w(operands=1), "su-exec": _w(operands=1), "chroot": _w("--userspec --groups", operands=1),
    "sudo": _w("-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role -t --type "
               "-T --command-timeout -U --other-user", assignments=True),
    "doas": _w("-u -C"),
    "su": _SU, "runuser": _SU,
    # script(1) runs its `-c` command under a terminal it records; xargs runs its command
    # with the words of its standard input after the command's own
    "script": _w("-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format "
                 "-o --output-limit", script="-c --command"),
    "xargs": _w("-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs -s --max-chars "
                "--process-slot-var"),
    "kubectl": {"exec": _KUBECTL, "run": _KUBECTL, "debug": _KUBECTL},
    "oc": {"exec": _KUBECTL, "run": _KUBECTL, "debug": _KUBECTL},
    "docker": _CONTAINERS, "podman": _CONTAINERS, "nerdctl": _CONTAINERS,
    "docker-compose": {"run": _COMPOSE, "exec": _COMPOSE},
    "srun": _SRUN, "salloc": _SRUN, "sbatch": _SBATCH,
    **dict.fromkeys(("mpirun", "mpiexec", "orterun", "prterun", "oshrun", "mpiexec.hydra"), _MPI),
    # tracers, privilege and namespace changers, and repeaters run the command after their options
    "strace": _w("-a -b -e -E -I -o -O -p -P -s -S -u -X -U --output --env --user --attach --trace-path "
                 "--string-limit"),
    "ltrace": _w("-a -A -D -e -F -l -n -o -p -s -u -w -x --align --indent --library --output"),
    "setpriv": _w("--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps --ambient-caps --bounding-set "
                  "--securebits --pdeathsig --selinux-label --apparmor-profile --landlock-access --landlock-rule"),
    "sg": _w(operands=1, script="-c"),  # `sg GROUP -c CMD`
    "unshare": _w("-S --setuid -G --setgid -R --root -w --wd --propagation --setgroups --map-user --map-group "
                  "--map-users --map-groups"),
    "nsenter": _w("-t --target -S --setuid -G --setgid"),
    "watch": _w("-n --interval -q --equexit"),
    "valgrind": _w(), "catchsegv": _w(), "firejail": _w(), "pkexec": _w("--user"),
    "prlimit": _w("-p --pid -o --output"), "cgexec": _w("-g"),
}

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def is_assignment(word: str) -> bool:
    return _ASSIGNMENT.match(word) is not None


@attrs.frozen
class Unwrapped:
    """What a command's wrappers run: the command from word `start` on, or a shell script."""

    start: int  # the first word of the command run (0: no wrapper)
    script: tuple[int, str] | None = None  # or: (the word holding it, the script's text)
    assigned: tuple[int, ...] = ()  # the NAME=value words the wrappers set (`env A=1 cmd`)
    # a shell's `-c` script: the index of its first argument, `$1` (`sh -c SCRIPT ARG0 ARG1...`;
    # past the end for none), so `"$@"` in it is known; None where a script's arguments are not
    arguments: int | None = None


def unwrap(words: Sequence[str], *, torch_launcher: bool = False) -> Unwrapped:
    """Unwrap `words` (a command's argv) wrapper by wrapper; a wrapper whose command is not
    known here (`bash script.sh`, `su user`, `kubectl exec pod` without `--`) ends the walk
    at itself. `torch_launcher`: torch's launcher is a wrapper too, its script or module the
    command (lint's launch lines; the ratchet follows its child processes itself)."""
    start = 0
    assigned: list[int] = []
    while start < len(words):  # each wrapper takes at least its own word
        while start < len(words) and is_assignment(words[start]):  # `A=1 cmd`, as a shell reads it
            assigned.append(start)
            start += 1
        found = _wrapper(words, start, torch_launcher)
        if found is None:
            break
        wrapper, at = found
        taken = _own_words(wrapper, words, at, assigned)
        if taken is None:
            break
        if isinstance(taken, tuple):
            return Unwrapped(start, taken, tuple(assigned), taken[0] + 2 if wrapper.shell else None)
        start = taken
    return Unwrapped(start, None, tuple(assigned))


def _wrapper(words: Sequence[str], start: int, torch_launcher: bool = False) -> tuple[Wrapper, int] | None:
    """The wrapper `words[start]` names, and the index of its last word before its own
    options (its subcommand's: `docker --context x run`)."""
    if start >= len(words):
        return None
    if torch_launcher and PurePosixPath(words[start]).name == "torchrun":
        return _TORCHRUN, start
    module = _python_module(words, start) if torch_launcher else None
    if module is not None:
        return (_TORCHRUN, module) if words[module] in TORCH_LAUNCH_MODULES else None
    entry: Wrapper | _Table | None = WRAPPERS.get(PurePosixPath(words[start]).name)
    at = start
    while isinstance(entry, Mapping):
        table = entry
        at = next((i for i in range(at + 1, len(words)) if words[i] in table or words[i] == "--"), len(words))
        if at >= len(words) or words[at] == "--":
            return None  # `kubectl get pods`, `docker build .`: runs no command of the line
        entry = table[words[at]]
    return (entry, at) if entry is not None else None


def _python_module(words: Sequence[str], start: int) -> int | None:
    """The index of the module `python [options] -m MODULE` at `words[start]` runs (None
    for a script or another program)."""
    if _PYTHON.fullmatch(PurePosixPath(words[start]).name) is None:
        return None
    i = start + 1
    while i < len(words) and words[i].startswith("-") and words[i] not in ("-", "--"):
        word = words[i]
        if _PYTHON_M.fullmatch(word):  # `-m`, and after flags of no value in its cluster: `-um`
            return i + 1 if i + 1 < len(words) else None
        if not word.startswith("--") and ("m" in word or "c" in word):
            return None  # `-mpkg` glued (rare) or a command (`-c`): not followed
        i += 2 if word in _PYTHON_VALUED else 1
    return None


def _own_words_special(w: Wrapper, words: Sequence[str], at: int) -> int | tuple[int, str] | None:
    """_own_words of a wrapper whose command follows `--`, a shell, or one whose options
    are whole words (`mpirun -np 4 --mca btl self CMD`)."""
    if w.dashdash:
        dash = next((i for i in range(at + 1, len(words)) if words[i] == "--"), None)
        return dash + 1 if dash is not None and dash + 1 < len(words) else None
    if w.shell:
        i, letters = shell_options(words, at + 1)
        return (i, words[i]) if "c" in letters and i < len(words) else None
    i = at + 1
    while i < len(words) and len(words[i]) > 1 and words[i][0] == "-":
        if words[i] == "--":
            return i + 1 if i + 1 < len(words) else None
        name, eq, _ = words[i].partition("=")
        i += 1 if eq else 3 if name in w.pairs else 2 if name in w.valued else 1
    return i if i < len(words) else None


def _own_words(w: Wrapper, words: Sequence[str], at: int, assigned: list[int]) -> int | tuple[int, str] | None:
    """Walk the wrapper's own words from `at` (its name): the index of the command it runs,
    (index, text) of the script it runs, or None when it runs neither."""
    if w.dashdash or w.shell or w.words:
        return _own_words_special(w, words, at)
    i = at + 1
    dashdash = False
    operands = 0
    while i < len(words):
        text = words[i]
        if text == "--":
            i += 1
            dashdash = True
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if name in w.script:
                return (i, value) if eq else ((i + 1, words[i + 1]) if i + 1 < len(words) else None)
            i += 2 if not eq and w.takes(name) else 1
            continue
        if len(text) > 1 and text[0] == "-":
            i += 1
            for j in range(1, len(text)):  # a cluster of short options: `-lc`, `-it`, `-eFOO=1`
                option = text[0] + text[j]
                if option in w.script:
                    rest = text[j + 1:]
                    return (i - 1, rest) if rest else ((i, words[i]) if i < len(words) else None)
                if w.takes(option):
                    i += 0 if text[j + 1:] else 1  # its value: the rest of the word, or the next word
                    break
            continue
        if text == "-":  # env's `-i`, su's `-l`
            i += 1
            continue
        if w.assignments and is_assignment(text):
            assigned.append(i)
            i += 1
            continue
        if operands < w.operands:
            operands += 1
            i += 1
            continue
        break
    if w.script and w.operands and not dashdash:
        # `su user`: a login shell, no command of the line (`runuser -u x -- CMD` has one);
        # sbatch, without `--wrap`, runs its batch script file (`sbatch job.sh ARGS`)
        return None
    return i if i < len(words) else None
