// libpng's simplified API (png_image) imports into Swift as it is; this header only names it.
#include <png.h>
