# Syntax:
#   name  = <text>   assignment
#   name ?= <text>   conditional assignment
#   name += <text>   prepend
#   name =+ <text>   append
# Predefined variables: _SPACE_, _HERE_, _TARGET_DIR_, _TARGET_SIZE_, _NVVM_BRANCH_


NVVMIR_LIBRARY_DIR = /usr/lib/nvidia-cuda-toolkit/libdevice

PATH		+= /usr/lib/nvidia-cuda-toolkit/bin:

#INCLUDES	+=

LIBRARIES	=+ $(_SPACE_) -L/usr/lib/x86_64-linux-gnu/stubs -L/usr/lib/x86_64-linux-gnu

#CUDAFE_FLAGS	+=
#PTXAS_FLAGS	+=
