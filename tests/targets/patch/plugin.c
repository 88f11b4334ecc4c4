/* A plugin built twice, into two directories, under one soname: opener.c tells the copies
 * apart by what plugin_which returns. */
const char *plugin_which(void)
{
    return WHICH;
}
