set terminal pngcairo size 1200,640
set output 'docs/papers/colossal-tesseract-dgx-a100.png'
set datafile separator ','
set key outside below maxrows 4
set grid
set multiplot layout 1,2 title 'scenarios/papers/colossal-tesseract-dgx-a100.yaml' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'iteration time (s)'
plot 'docs/papers/colossal-tesseract-dgx-a100.plot.csv' using ($2):((strcol(3) eq 'ok' && 1) ? $4 : 1/0) with linespoints title 'tpsim' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'model TFLOP/s per GPU'
plot 'docs/papers/colossal-tesseract-dgx-a100.plot.csv' using ($2):((strcol(3) eq 'ok' && 1) ? $5 : 1/0) with linespoints title 'tpsim' noenhanced
unset multiplot
set terminal svg size 1200,640
set output 'docs/papers/colossal-tesseract-dgx-a100.svg'
set datafile separator ','
set key outside below maxrows 4
set grid
set multiplot layout 1,2 title 'scenarios/papers/colossal-tesseract-dgx-a100.yaml' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'iteration time (s)'
plot 'docs/papers/colossal-tesseract-dgx-a100.plot.csv' using ($2):((strcol(3) eq 'ok' && 1) ? $4 : 1/0) with linespoints title 'tpsim' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'model TFLOP/s per GPU'
plot 'docs/papers/colossal-tesseract-dgx-a100.plot.csv' using ($2):((strcol(3) eq 'ok' && 1) ? $5 : 1/0) with linespoints title 'tpsim' noenhanced
unset multiplot
