# Turns a text file into a C source defining `const char cfg_default_yaml[]`.
# Bytes are written as hex so no quoting or escaping rules can bite.
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n\t" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from config/default.yaml by config/embed.cmake. */\n"
	"const char cfg_default_yaml[] = {\n\t${bytes}0x00\n};\n")
