// Package privfile writes airlock's own files on the host — the audit log,
// the grants file, the trace file, the run report, the file store — so that
// nobody else, and above all no box, can steer where those writes land.
//
// airlock runs as the host user (often root) and a box may write the
// directories its policy grants. A plain os.WriteFile or an O_CREAT open
// follows whatever symbolic link the box planted there, so a path that
// looks like "W/report.json" can write /etc/profile.d/x.sh. Every function
// here therefore:
//
//   - walks the path one component at a time from "/", each directory opened
//     with O_NOFOLLOW|O_DIRECTORY (openat2 with RESOLVE_BENEATH|
//     RESOLVE_NO_SYMLINKS where the kernel has it), and checks each directory
//     it holds by its descriptor, so a component swapped for a link between
//     a check and a use is refused rather than followed;
//   - follows a symbolic link only when the directory holding it is one
//     nobody else may change (the rule below), so a /var/run -> /run on the
//     host still works while a link the box planted never does;
//   - refuses any directory on the way that lies at or beneath one of the
//     box's writable paths (Options.BoxWritable) and, when airlock runs as
//     root, any directory that is group- or world-writable without the
//     sticky bit or owned by a user other than root (the ssh StrictModes
//     rule);
//   - replaces a file by writing a new temporary file (O_CREAT|O_EXCL|
//     O_NOFOLLOW) in the same directory, fsyncing it, renaming it over the
//     old name and fsyncing the directory; and opens files for appending
//     with O_NOFOLLOW, refusing anything but a regular file with one link.
//
// Refusals are errs.Invalid errors that name the path, what is wrong and the
// fix. Who may import it: audit, approvals, files, jobs/pki, internal/wiring and
// internal/cli. It imports only the standard library, golang.org/x/sys/unix
// and errs (for the error classes every package shares).
package privfile
