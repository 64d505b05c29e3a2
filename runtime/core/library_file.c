/*===- library_file.c - a model library's ELF image checked before dlopen ===//
 *
 * dlopen maps a shared library's segments from its file without checking
 * that the file holds them: a library cut short inside its ELF image (a
 * copy interrupted, a full disk) maps pages past the file's end, and the
 * first touch of one (the dynamic linker's own relocations) kills the
 * process with SIGBUS. tfm_model_library_check reads the headers and
 * compares what they place in the file with its size, so that the Python
 * package and tfm-serve refuse such a file by name before they dlopen it.
 * A file cut after its image (in the weights appended to it) is left to
 * tfm_model_load, which says the weights are missing or short.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "runtime/core/status.h"
#include "tfm/tfm_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* This machine's ELF class (ElfW picks the structures of the same). */
#if __SIZEOF_POINTER__ == 8
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_DATA ELFDATA2LSB
#else
#define NATIVE_DATA ELFDATA2MSB
#endif

/* `count` items of `size` bytes at `offset` end at *end, unless that
 * overflows 64 bits (then they are past any file). */
static int table_end(uint64_t offset, uint64_t count, uint64_t size,
                     uint64_t *end) {
  if (size && count > (UINT64_MAX - offset) / size)
    return 0;
  *end = offset + count * size;
  return 1;
}

/* Raises *needed to `end`. */
static void need(uint64_t *needed, uint64_t end) {
  if (end > *needed)
    *needed = end;
}

/* Raises *needed to the end of the program headers and of every segment
 * they place in the file (dlopen maps the PT_LOAD ones; the others point
 * into them). */
static tfm_status_code check_segments(int fd, const char *path, uint64_t size,
                                      const ElfW(Ehdr) * header,
                                      uint64_t *needed, tfm_status *status) {
  if (header->e_phnum && header->e_phentsize != sizeof(ElfW(Phdr)))
    return tfm_fail(status, TFM_ERROR_IO,
                    "'%s' is not a shared library for this machine: program "
                    "headers of %u bytes, not %zu",
                    path, (unsigned)header->e_phentsize, sizeof(ElfW(Phdr)));
  uint64_t end;
  if (!table_end(header->e_phoff, header->e_phnum, sizeof(ElfW(Phdr)), &end))
    end = UINT64_MAX;
  need(needed, end);
  if (end > size) /* the segments cannot be read */
    return TFM_OK;
  for (unsigned i = 0; i < header->e_phnum; ++i) {
    ElfW(Phdr) segment;
    if (pread(fd, &segment, sizeof segment,
              (off_t)(header->e_phoff + i * sizeof segment)) !=
        (ssize_t)sizeof segment)
      return tfm_fail(status, TFM_ERROR_IO, "cannot read '%s': %s", path,
                      strerror(errno));
    if (!segment.p_filesz)
      continue;
    if (!table_end(segment.p_offset, 1, segment.p_filesz, &end))
      end = UINT64_MAX;
    need(needed, end);
  }
  return TFM_OK;
}

tfm_status_code tfm_model_library_check(const char *path, tfm_status *status) {
  if (!path)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_model_library_check: NULL path");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return tfm_fail(status, TFM_ERROR_IO, "cannot open '%s': %s", path,
                    strerror(errno));
  struct stat st;
  ElfW(Ehdr) header;
  tfm_status_code code = TFM_OK;
  if (fstat(fd, &st) != 0) {
    code = tfm_fail(status, TFM_ERROR_IO, "cannot read '%s': %s", path,
                    strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    code = tfm_fail(status, TFM_ERROR_IO, "'%s' is not a regular file", path);
  } else if (pread(fd, &header, sizeof header, 0) != (ssize_t)sizeof header ||
             memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    code = tfm_fail(status, TFM_ERROR_IO,
                    "'%s' is not a shared library (no ELF header in its %llu "
                    "bytes)",
                    path, (unsigned long long)st.st_size);
  } else if (header.e_ident[EI_CLASS] != NATIVE_CLASS ||
             header.e_ident[EI_DATA] != NATIVE_DATA) {
    code = tfm_fail(status, TFM_ERROR_IO,
                    "'%s' is an ELF file for another kind of machine (%d-bit, "
                    "%s-endian)",
                    path, header.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32,
                    header.e_ident[EI_DATA] == ELFDATA2MSB ? "big" : "little");
  } else {
    uint64_t size = (uint64_t)st.st_size, needed = sizeof header, end;
    code = check_segments(fd, path, size, &header, &needed, status);
    /* The section headers come last in the image: a cut before them is a
     * cut inside it, even where no segment reaches that far. */
    if (code == TFM_OK && header.e_shoff) {
      if (!table_end(header.e_shoff, header.e_shnum ? header.e_shnum : 1,
                     header.e_shentsize, &end))
        end = UINT64_MAX;
      need(&needed, end);
    }
    if (code == TFM_OK && needed > size)
      code =
          tfm_fail(status, TFM_ERROR_IO,
                   "'%s' is truncated: the file has %llu bytes, its ELF "
                   "image needs %llu (an interrupted copy, a full disk?); "
                   "copy or compile the model library again",
                   path, (unsigned long long)size, (unsigned long long)needed);
  }
  close(fd);
  return code == TFM_OK ? tfm_ok(status) : code;
}
