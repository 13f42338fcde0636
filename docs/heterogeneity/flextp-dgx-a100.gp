set terminal pngcairo size 1150,600
set output 'docs/heterogeneity/flextp-dgx-a100.png'
set datafile separator ','
set grid
set termoption noenhanced
set xtics ('[1 1 1 1 1 1 1 1]' 0, '[1.1 1 1 1 1 1 1 1]' 1, '[1.5 1 1 1 1 1 1 1]' 2, '[2 1 1 1 1 1 1 1]' 3, '[4 1 1 1 1 1 1 1]' 4, '[8 1 1 1 1 1 1 1]' 5, '[2 2 2 2 1 1 1 1]' 6, '[8 6 4 2 1 1 1 1]' 7) rotate by -30
set xrange [-0.5:7.5]
set key outside right top vertical box opaque
set xlabel 'slowdown'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'flextp-dgx-a100' font ',14'
set title ''
plot 'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'none') ? $6 * 1 : 1/0) with linespoints lw 2 pt 1 title 'balance none', \
  'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'zero_resize') ? $6 * 1 : 1/0) with linespoints lw 2 pt 2 title 'balance zero_resize', \
  'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'migrate') ? $6 * 1 : 1/0) with linespoints lw 2 pt 3 title 'balance migrate', \
  'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'semi') ? $6 * 1 : 1/0) with linespoints lw 2 pt 4 title 'balance semi'
unset multiplot
set terminal svg size 1150,600
set output 'docs/heterogeneity/flextp-dgx-a100.svg'
set datafile separator ','
set grid
set termoption noenhanced
set xtics ('[1 1 1 1 1 1 1 1]' 0, '[1.1 1 1 1 1 1 1 1]' 1, '[1.5 1 1 1 1 1 1 1]' 2, '[2 1 1 1 1 1 1 1]' 3, '[4 1 1 1 1 1 1 1]' 4, '[8 1 1 1 1 1 1 1]' 5, '[2 2 2 2 1 1 1 1]' 6, '[8 6 4 2 1 1 1 1]' 7) rotate by -30
set xrange [-0.5:7.5]
set key outside right top vertical box opaque
set xlabel 'slowdown'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'flextp-dgx-a100' font ',14'
set title ''
plot 'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'none') ? $6 * 1 : 1/0) with linespoints lw 2 pt 1 title 'balance none', \
  'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'zero_resize') ? $6 * 1 : 1/0) with linespoints lw 2 pt 2 title 'balance zero_resize', \
  'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'migrate') ? $6 * 1 : 1/0) with linespoints lw 2 pt 3 title 'balance migrate', \
  'docs/heterogeneity/flextp-dgx-a100.plot.csv' using (strcol(2) eq '[1 1 1 1 1 1 1 1]' ? 0 : strcol(2) eq '[1.1 1 1 1 1 1 1 1]' ? 1 : strcol(2) eq '[1.5 1 1 1 1 1 1 1]' ? 2 : strcol(2) eq '[2 1 1 1 1 1 1 1]' ? 3 : strcol(2) eq '[4 1 1 1 1 1 1 1]' ? 4 : strcol(2) eq '[8 1 1 1 1 1 1 1]' ? 5 : strcol(2) eq '[2 2 2 2 1 1 1 1]' ? 6 : strcol(2) eq '[8 6 4 2 1 1 1 1]' ? 7 : 1/0):((strcol(4) eq 'ok' && strcol(3) eq 'semi') ? $6 * 1 : 1/0) with linespoints lw 2 pt 4 title 'balance semi'
unset multiplot
