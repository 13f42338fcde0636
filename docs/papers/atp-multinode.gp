set terminal pngcairo size 1150,600
set output 'docs/papers/atp-multinode.png'
set datafile separator ','
set grid
set termoption noenhanced
set xtics ('[8 2]' 0, '[4 4]' 1, '[2 8]' 2, '[1 16]' 3, '[8 4]' 4, '[4 8]' 5, '[2 16]' 6, '[1 32]' 7) rotate by -30
set xrange [-0.5:7.5]
set key outside right top vertical box opaque
set xlabel '2D mesh'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'atp-multinode' font ',14'
set title ''
plot 'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'row-first' && strcol(4) eq '2') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title 'placement row-first, machines 2', \
  'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'row-first' && strcol(4) eq '4') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title 'placement row-first, machines 4', \
  'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'column-first' && strcol(4) eq '2') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title 'placement column-first, machines 2', \
  'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'column-first' && strcol(4) eq '4') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title 'placement column-first, machines 4'
unset multiplot
set terminal svg size 1150,600
set output 'docs/papers/atp-multinode.svg'
set datafile separator ','
set grid
set termoption noenhanced
set xtics ('[8 2]' 0, '[4 4]' 1, '[2 8]' 2, '[1 16]' 3, '[8 4]' 4, '[4 8]' 5, '[2 16]' 6, '[1 32]' 7) rotate by -30
set xrange [-0.5:7.5]
set key outside right top vertical box opaque
set xlabel '2D mesh'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'atp-multinode' font ',14'
set title ''
plot 'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'row-first' && strcol(4) eq '2') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title 'placement row-first, machines 2', \
  'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'row-first' && strcol(4) eq '4') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title 'placement row-first, machines 4', \
  'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'column-first' && strcol(4) eq '2') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title 'placement column-first, machines 2', \
  'docs/papers/atp-multinode.plot.csv' using (strcol(2) eq '[8 2]' ? 0 : strcol(2) eq '[4 4]' ? 1 : strcol(2) eq '[2 8]' ? 2 : strcol(2) eq '[1 16]' ? 3 : strcol(2) eq '[8 4]' ? 4 : strcol(2) eq '[4 8]' ? 5 : strcol(2) eq '[2 16]' ? 6 : strcol(2) eq '[1 32]' ? 7 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq 'column-first' && strcol(4) eq '4') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title 'placement column-first, machines 4'
unset multiplot
