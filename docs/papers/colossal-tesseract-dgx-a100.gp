set terminal pngcairo size 1150,600
set output 'docs/papers/colossal-tesseract-dgx-a100.png'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'micro-batch (sequences)'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'colossal-tesseract-dgx-a100' font ',14'
set title ''
plot 'docs/papers/colossal-tesseract-dgx-a100.plot.csv' using ($2):((strcol(3) eq 'ok') ? $5 * 1 : 1/0) with linespoints lw 2 pt 1 title 'model TFLOP/s per GPU'
unset multiplot
set terminal svg size 1150,600
set output 'docs/papers/colossal-tesseract-dgx-a100.svg'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'micro-batch (sequences)'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'colossal-tesseract-dgx-a100' font ',14'
set title ''
plot 'docs/papers/colossal-tesseract-dgx-a100.plot.csv' using ($2):((strcol(3) eq 'ok') ? $5 * 1 : 1/0) with linespoints lw 2 pt 1 title 'model TFLOP/s per GPU'
unset multiplot
