// glibc's malloc tuning (mallopt), which Swift's Glibc module does not bring
// in. Swift calls it directly; this header only brings it in.
#include <malloc.h>
