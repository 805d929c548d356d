package bundle

import "syscall"

const sysFstatat = syscall.SYS_FSTATAT
