package bundle

import "syscall"

// sysFstatat is fstatat's number, which amd64 names newfstatat.
const sysFstatat = syscall.SYS_NEWFSTATAT
